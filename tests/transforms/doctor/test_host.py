from collections import namedtuple

import pytest

from rewardmill.transforms.doctor import host
from rewardmill.transforms.doctor.report import FAIL, OK, WARN


@pytest.mark.parametrize(
    ("version", "status"),
    [
        ((3, 11, 7), OK),  # the supported range
        ((3, 12, 0), OK),
        ((3, 10, 14), FAIL),  # too old
        ((3, 13, 0), FAIL),  # beyond what the pins resolve on
    ],
)
def test_python_range(version, status):
    assert host.python_check(version, ">=3.11,<3.13").status == status


def test_packages_name_each_pin_that_does_not_hold():
    (ok,) = host.package_checks(["pyyaml>=6", 'pytest==9.2.0; extra == "dev"'])  # an extra's pin is not checked
    assert ok.status == OK and "1 dependencies match" in ok.detail
    (bad,) = host.package_checks(["pyyaml==0.1", "no-such-package-xyz==1.0"])
    assert bad.status == FAIL
    assert "pyyaml" in bad.detail and "(needs ==0.1)" in bad.detail and "no-such-package-xyz missing" in bad.detail
    assert "make install" in bad.fix


@pytest.mark.parametrize(
    ("env", "hub_ids", "statuses"),
    [
        ({v: "1" for v in host.OFFLINE_VARIABLES}, (), [OK]),  # offline, nothing from a hub
        ({}, (), [WARN]),  # downloads allowed: worth knowing
        ({v: "1" for v in host.OFFLINE_VARIABLES}, (("model.source", "org/m"),), [OK, FAIL]),  # cannot load offline
        ({}, (("model.source", "org/m"),), [WARN, WARN]),  # downloaded on first use
        ({"HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}, (), [WARN]),  # 0 is off
    ],
)
def test_offline(env, hub_ids, statuses):
    assert [c.status for c in host.offline_checks(env, hub_ids)] == statuses


Usage = namedtuple("Usage", "total used free")


@pytest.mark.parametrize(("free_gib", "status"), [(50, OK), (5, WARN), (1, FAIL)])
def test_disk_thresholds(tmp_path, monkeypatch, free_gib, status):
    monkeypatch.setattr(host.shutil, "disk_usage", lambda path: Usage(100 * 2**30, 0, free_gib * 2**30))
    (check,) = host.disk_checks({"outputs": str(tmp_path), "caches": str(tmp_path / "not/yet/made"), "s3": "s3://b/c"})
    assert check.status == status and str(tmp_path) in check.detail  # one filesystem, measured once; s3 skipped


def test_vllm_asked_for_but_missing_fails(monkeypatch):
    monkeypatch.setattr(host, "_installed", lambda names: "")
    checks = host.accelerator_checks(needs_vllm=["rollouts"], needs_cuda=[])
    assert [c.status for c in checks] == [OK, FAIL] and "rollouts ask for it" in checks[1].detail
    assert [c.status for c in host.accelerator_checks([], [])] == [OK, OK]  # not asked for: fine
