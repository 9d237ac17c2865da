"""`rewardmill push --repo-id OWNER/NAME [--revision TAG]`: upload the exported Hub-layout folder to a dataset repo.

Uploads `export/` (README.md dataset card + data/<config>/<split>-0000i-of-0000N.parquet, made by the export stage)
to the repo's main branch in one commit, then tags that commit with --revision so the exact release can be loaded
with `load_dataset(repo_id, revision=TAG)`. Everything is checked before any network call; `--dry-run` needs
neither network nor token. The token comes only from HF_TOKEN or `hf auth login`, never from the command line.

A tagged push is a release: when the export lies in a DVC repo, the Hub tag must name what `git checkout TAG` and
`dvc pull` give back, so push refuses unless git tag TAG is on HEAD, no tracked file has uncommitted changes
(dvc.lock included) and `dvc status` is clean. Without --revision nothing is checked (an untagged upload).
"""

import argparse
import re
import subprocess
from pathlib import Path

from huggingface_hub import HfApi, constants, get_token

# Hub rules: letters, digits, "-", "_", "." ; no leading/trailing "-" or "."; no "--" or ".."; name at most 96.
_REPO_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
# A tag is a git ref name; keep to a safe subset (v1.0, 2024-06-01, release/v2) rather than git's full grammar.
_TAG = r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}"


def check_repo_id(repo_id: str) -> str:
    """Return repo_id if it looks like "owner/name", else raise SystemExit saying why."""
    if not re.fullmatch(rf"{_REPO_PART}/{_REPO_PART}", repo_id or "") or "--" in repo_id or ".." in repo_id:
        raise SystemExit(f"--repo-id {repo_id!r} must look like 'owner/name' (letters, digits, '-', '_', '.')")
    return repo_id


def check_revision(revision: str) -> str:
    """Return revision if it is a usable tag name, else raise SystemExit saying why."""
    bad = (
        not re.fullmatch(_TAG, revision or "")
        or ".." in revision
        or "//" in revision
        or revision.endswith(("/", ".", ".lock"))
        or revision == "main"  # would shadow the branch the data is committed to
    )
    if bad:
        raise SystemExit(
            f"--revision {revision!r} is not a valid tag name: use letters, digits, '.', '_', '-', '/' "
            "(e.g. v1.0), not 'main', no '..' and no trailing '/', '.' or '.lock'"
        )
    return revision


def plan_upload(folder: Path) -> list[tuple[str, int]]:
    """The files push would upload: (path relative to folder, size in bytes), sorted by path.

    Raises SystemExit naming the folder and what is missing when it is not a complete export.
    """
    folder = Path(folder)
    hint = "run `dvc repro export` (or `rewardmill run export ...`) first"
    if not folder.is_dir():
        raise SystemExit(f"export folder {folder} does not exist; {hint}")
    missing = []
    if not (folder / "README.md").is_file():
        missing.append("README.md (the dataset card)")
    if not any((folder / "data").glob("**/*.parquet")):
        missing.append("parquet files under data/")
    if missing:
        raise SystemExit(f"export folder {folder} is incomplete, missing {' and '.join(missing)}; {hint}")
    files = (p for p in folder.rglob("*") if p.is_file() and not p.relative_to(folder).parts[0].startswith("."))
    return sorted((p.relative_to(folder).as_posix(), p.stat().st_size) for p in files)


def release_problems(folder: Path, revision: str) -> list[str]:
    """Why folder is not the DVC release `revision` (the release flow in docs/releases.md), or [] when it is.

    An export outside a DVC repo (made elsewhere, copied in) has no dvc.lock to hold it to: nothing to check.
    """
    from dvc.exceptions import NotDvcRepoError
    from dvc.repo import Repo

    try:
        root = Path(Repo.find_root(str(Path(folder).resolve())))
    except NotDvcRepoError:
        return []

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)

    head = git("rev-parse", "HEAD")
    if head.returncode:
        return [f"{root} has no git commit: a release is a commit with dvc.lock, tagged {revision}"]
    problems = []
    with Repo(str(root)) as repo:
        stale = sorted(key.rsplit(":", 1)[-1] for key in repo.status())  # stage names (keys are relative to cwd)
    if stale:
        problems.append(f"`dvc status` lists changes in {', '.join(stale)}: run `dvc repro`, then commit dvc.lock")
    if git("ls-files", "--error-unmatch", "dvc.lock").returncode:
        problems.append("dvc.lock is not committed: `git add dvc.lock ...` and `git commit`")
    elif git("status", "--porcelain", "--untracked-files=no").stdout.strip():
        problems.append("tracked files have uncommitted changes (`git status`): commit them")
    tagged = git("rev-parse", "-q", "--verify", f"refs/tags/{revision}^{{commit}}").stdout.strip()
    if not tagged:
        problems.append(f"no git tag {revision}: `dvc push`, then `git tag -a {revision}` on the release commit")
    elif tagged != head.stdout.strip():
        problems.append(f"git tag {revision} is not HEAD: `git checkout {revision}` and `dvc pull` first")
    return problems


def _offline() -> bool:
    return constants.is_offline_mode()


def push(folder: Path, repo_id: str, revision: str | None, private: bool, force_tag: bool) -> str:
    """Upload folder to the dataset repo, tag the commit; return the URL of the pushed revision."""
    api = HfApi()  # token resolved by huggingface_hub itself (HF_TOKEN or `hf auth login`)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    tags: set[str] = set()
    if revision:
        tags = {ref.name for ref in api.list_repo_refs(repo_id, repo_type="dataset").tags}
        if revision in tags and not force_tag:
            raise SystemExit(
                f"tag {revision!r} already exists on {repo_id}; pick a new --revision or pass --force-tag"
            )
    commit = api.upload_folder(
        repo_id=repo_id,
        folder_path=folder,
        repo_type="dataset",
        revision="main",
        commit_message=f"Upload dataset {revision}" if revision else "Upload dataset",
    )
    if revision:
        if revision in tags:  # --force-tag: move the tag to the new commit
            api.delete_tag(repo_id, tag=revision, repo_type="dataset")
        api.create_tag(repo_id, tag=revision, revision=commit.oid, repo_type="dataset")
    return f"{api.endpoint}/datasets/{repo_id}/tree/{revision or 'main'}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="rewardmill push", description=__doc__)
    parser.add_argument("--repo-id", required=True, help="dataset repo, 'owner/name' (created if missing)")
    parser.add_argument("--revision", help="tag to put on the upload commit, e.g. v1.0 (default: no tag)")
    parser.add_argument("--folder", type=Path, default=Path("export"), help="export folder (default: export)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be uploaded; no network, no token")
    parser.add_argument("--private", action="store_true", help="create the repo private (existing repos unchanged)")
    parser.add_argument("--force-tag", action="store_true", help="move --revision if that tag exists already")
    args = parser.parse_args(argv)

    repo_id = check_repo_id(args.repo_id)
    revision = check_revision(args.revision) if args.revision is not None else None
    files = plan_upload(args.folder)
    problems = release_problems(args.folder, revision) if revision else []
    refusal = f"{args.folder} is not the release {revision}:" + "".join(f"\n  - {p}" for p in problems)
    target = f"dataset {repo_id} (main branch" + (f", tag {revision})" if revision else ")")
    if args.dry_run:
        for path, size in files:
            print(f"{size:>12,d}  {path}")
        print(f"dry run: {len(files)} files, {sum(s for _, s in files):,d} bytes would go to {target}")
        if problems:
            print(f"a push would refuse, {refusal}")
        return
    if problems:
        raise SystemExit(f"refusing to push, {refusal}\n(push with no --revision for an untagged upload)")
    if _offline():
        raise SystemExit("HF_HUB_OFFLINE is set, so nothing can be uploaded; unset HF_HUB_OFFLINE (or use --dry-run)")
    if get_token() is None:
        raise SystemExit(
            "no Hugging Face token found; run `hf auth login` or set HF_TOKEN (a write token), then retry"
        )
    print(f"uploading {len(files)} files from {args.folder} to {target}")
    print(push(args.folder, repo_id, revision, args.private, args.force_tag))
