import json

import pytest

from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE, fingerprint, read_policy_info, resolve_source
from tests.transforms.labelers.judge_recordings import MODEL_ID_FILE as RECORDED_MODEL_ID


def test_materialized_default_model_is_a_plain_hf_folder(policy_dir):
    from transformers import AutoConfig

    names = {p.name for p in policy_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", FINGERPRINT_FILE} <= names
    assert not any(n.endswith(".gguf") for n in names)
    assert "quantization_config" not in AutoConfig.from_pretrained(policy_dir).to_dict()
    info = read_policy_info(policy_dir)
    assert (
        info.fingerprint
        == fingerprint(policy_dir)
        == json.loads((policy_dir / FINGERPRINT_FILE).read_text())["fingerprint"]
    )
    # the bytes of the default model as every earlier build made them (the judges' recordings were made on it): a
    # faster load (gguf_once.parse_once) or a library upgrade that changes them shows here
    assert info.fingerprint == RECORDED_MODEL_ID.read_text().strip()


def test_fingerprint_changes_with_the_chat_template(policy_dir, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(policy_dir, copy)
    assert fingerprint(copy) == fingerprint(policy_dir)
    template = copy / "chat_template.jinja"
    template.write_text(template.read_text() + " ")
    assert fingerprint(copy) != fingerprint(policy_dir)


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("builtin:gpt-99", ValueError),  # unknown builtin
        ("/nonexistent/model.gguf", FileNotFoundError),  # missing GGUF
        ("./no/such/folder", FileNotFoundError),  # local-looking path that does not exist
        ("not-a-hub-id", FileNotFoundError),  # neither a folder nor org/name
    ],
)
def test_bad_sources(source, error):
    with pytest.raises(error):
        resolve_source(source)


def test_hub_ids_and_folders_resolve(tmp_path):
    assert resolve_source("HuggingFaceTB/SmolLM2-135M-Instruct") == ("HuggingFaceTB/SmolLM2-135M-Instruct", None)
    with pytest.raises(FileNotFoundError, match="config.json"):
        resolve_source(str(tmp_path))
    location, gguf = resolve_source("builtin:smollm2-135m-instruct")
    assert gguf.endswith(".gguf")


def test_missing_fingerprint_file_says_what_to_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="model"):
        read_policy_info(tmp_path)


def test_saved_tokenizer_config_does_not_depend_on_how_it_was_loaded(policy_dir, tmp_path):
    """transformers writes `local_files_only` (true under HF_HUB_OFFLINE) into the saved config: dropped, so the
    fingerprint is the same whether or not the model stage ran offline."""
    import json

    from rewardmill.transforms.sampling.materialize import drop_load_options

    assert "local_files_only" not in json.loads((policy_dir / "tokenizer_config.json").read_text())
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps({"a": 1, "local_files_only": True, "b": "é"}))
    drop_load_options(path)
    assert json.loads(path.read_text()) == {"a": 1, "b": "é"}
