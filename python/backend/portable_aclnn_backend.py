"""The package's build backend (PEP 517), in the standard library alone, so that `pip install .` and `pip wheel .`
work offline, in a fresh virtual environment, with or without build isolation: nothing is downloaded.

From the repository root (pyproject.toml there) it builds the C libraries with CMake (Release; the CUDA backend when
nvcc is found, or as PORTABLE_ACLNN_CUDA says) in a temporary directory and makes a wheel of python/portable_aclnn
with the three libraries in portable_aclnn/lib/ (their RPATH is $ORIGIN: the wheel is relocatable). From python/
(python/pyproject.toml, `pip install ./python`) it makes a pure-Python wheel of the package alone, which then looks
for the libraries as a source checkout does (docs/python.md). Neither writes into the source tree: the CMake build,
the staging directories and the metadata go to temporary directories.

Settings, as environment variables or pip's --config-settings (-C key=value; these win):
    PORTABLE_ACLNN_CUDA        cuda        AUTO (default: the CUDA backend when nvcc is found), ON, OFF
    PORTABLE_ACLNN_BUILD_DIR   build-dir   a CMake build directory to use and keep (incremental rebuilds); default:
                                           a temporary directory, removed after the build. The checkout's build/
                                           only with the C++ scripts' options in cmake-args (-DPACL_BUILD_TESTS=ON
                                           -DPACL_BUILD_BENCH=ON -DPACL_BUILD_EXAMPLES=ON, as .ci/run passes them),
                                           else this build's options rebuild it differently
    PORTABLE_ACLNN_CMAKE_ARGS  cmake-args  more CMake arguments, split as a shell would
                                           (e.g. -DCMAKE_CUDA_ARCHITECTURES=80)
    CMAKE_BUILD_PARALLEL_LEVEL             parallel jobs (default: the CPU count)
"""

import base64
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile

# An in-tree backend is imported from the source tree; its bytecode cache would be the one thing written there.
sys.dont_write_bytecode = True
_HERE = os.path.dirname(os.path.abspath(__file__))
_CACHE = os.path.join(_HERE, "__pycache__")
if os.path.isdir(_CACHE) and all(name.startswith("portable_aclnn_backend.") for name in os.listdir(_CACHE)):
    shutil.rmtree(_CACHE, ignore_errors=True)

NAME = "portable_aclnn"
SUMMARY = ("CANN's aclnn operators (masked softmax, grid sampler, deformable attention, NSA compression) on CPUs and "
           "NVIDIA GPUs")
REQUIRES_PYTHON = ">=3.9"
REQUIRES = ["numpy"]
EXTRAS = {"torch": ["torch"]}
LIBRARIES = ("ascendcl", "nnopbase", "opapi")
SONAME_VERSION = "0"  # lib<name>.so.0: the name the libraries link each other by (their SONAME)
CMAKE_OPTIONS = ["-DCMAKE_BUILD_TYPE=Release", "-DPACL_BUILD_TESTS=OFF", "-DPACL_BUILD_BENCH=OFF",
                 "-DPACL_BUILD_EXAMPLES=OFF"]


# ----------------------------------------------------------------------------------------------------------------
# The source tree

def _layout():
    """(repository root or None, the directory holding portable_aclnn/): the repository root when pip builds it
    (CMakeLists.txt beside python/), else python/ alone (a pure-Python wheel)."""
    here = os.getcwd()
    if os.path.isfile(os.path.join(here, "CMakeLists.txt")) and os.path.isdir(os.path.join(here, "python", NAME)):
        return here, os.path.join(here, "python")
    if os.path.isdir(os.path.join(here, NAME)):
        return None, here
    raise RuntimeError(f"{here}: neither the portable-aclnn repository root nor its python/ directory")


def _version(package_parent):
    with open(os.path.join(package_parent, NAME, "__init__.py"), encoding="utf-8") as handle:
        match = re.search(r'^__version__ = "([^"]+)"', handle.read(), re.MULTILINE)
    if not match:
        raise RuntimeError("portable_aclnn/__init__.py has no __version__")
    return match.group(1)


def _package_files(package_parent):
    """(path in the wheel, path on disk) of the package's Python files."""
    root = os.path.join(package_parent, NAME)
    files = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d not in ("__pycache__", "lib"))
        for name in sorted(names):
            if name.endswith(".py") and name != "_install_dir.py":  # _install_dir.py: cmake --install's only
                path = os.path.join(directory, name)
                files.append((os.path.relpath(path, package_parent).replace(os.sep, "/"), path))
    return files


# ----------------------------------------------------------------------------------------------------------------
# Settings

def _setting(config_settings, key, variable, default=None):
    if config_settings and config_settings.get(key) not in (None, ""):
        return str(config_settings[key])
    return os.environ.get(variable) or default


def _cuda_mode(config_settings):
    mode = _setting(config_settings, "cuda", "PORTABLE_ACLNN_CUDA", "AUTO").upper()
    if mode not in ("AUTO", "ON", "OFF"):
        raise RuntimeError(f"PORTABLE_ACLNN_CUDA (or -C cuda=) must be AUTO, ON or OFF, got {mode!r}")
    return mode


def _log(message):
    print(f"portable_aclnn build: {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------------------------
# The C libraries

def _build_libraries(source, config_settings, stage):
    """Configures, builds and installs (component runtime) the libraries into stage; returns (lib dir, CUDA built,
    the CMake arguments)."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise RuntimeError("cmake not found: building portable_aclnn's libraries needs CMake >= 3.24 and a C++17 "
                           "compiler (Debian 12: apt-get install cmake ninja-build g++ libhwy-dev)")
    mode = _cuda_mode(config_settings)
    arguments = CMAKE_OPTIONS + [f"-DPACL_CUDA={mode}"]
    if mode != "OFF" and not shutil.which("nvcc") and os.access("/usr/local/cuda/bin/nvcc", os.X_OK):
        arguments.append("-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc")  # as scripts/test.sh
    arguments += shlex.split(_setting(config_settings, "cmake-args", "PORTABLE_ACLNN_CMAKE_ARGS", ""))
    build_dir = _setting(config_settings, "build-dir", "PORTABLE_ACLNN_BUILD_DIR")
    keep = build_dir is not None
    if keep:
        build_dir = os.path.abspath(build_dir)
    else:
        build_dir = tempfile.mkdtemp(prefix="portable-aclnn-cmake-")
    try:
        configure = [cmake, "-S", source, "-B", build_dir] + arguments
        if shutil.which("ninja") and not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
            configure[1:1] = ["-G", "Ninja"]
        _log(" ".join(shlex.quote(a) for a in configure))
        result = subprocess.run(configure, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sys.stderr.write(result.stdout)
        if result.returncode != 0:
            raise RuntimeError(f"CMake configure failed (status {result.returncode}); its output is above")
        found = re.findall(r"portable-aclnn CUDA backend: (ON|OFF)", result.stdout)
        cuda = bool(found) and found[-1] == "ON"
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        for command in ([cmake, "--build", build_dir, "--parallel", jobs],
                        [cmake, "--install", build_dir, "--prefix", stage, "--component", "runtime"]):
            _log(" ".join(shlex.quote(a) for a in command))
            subprocess.run(command, check=True, stdout=sys.stderr)
    finally:
        if not keep:
            shutil.rmtree(build_dir, ignore_errors=True)
    return os.path.join(stage, "lib"), cuda, arguments


# ----------------------------------------------------------------------------------------------------------------
# Wheels

def _platform_tag():
    return re.sub(r"[^\w]", "_", sysconfig.get_platform())


def _metadata(version):
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {version}", f"Summary: {SUMMARY}",
             f"Requires-Python: {REQUIRES_PYTHON}"]
    lines += [f"Requires-Dist: {requirement}" for requirement in REQUIRES]
    for extra, requirements in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {requirement}; extra == "{extra}"' for requirement in requirements]
    return "\n".join(lines) + "\n"


def _wheel_file(tag, pure):
    return (f"Wheel-Version: 1.0\nGenerator: portable_aclnn_backend\nRoot-Is-Purelib: {'true' if pure else 'false'}\n"
            f"Tag: {tag}\n")


def _date_time():
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    stamp = time.gmtime(int(epoch)) if epoch and epoch.isdigit() else time.gmtime(315532800)  # 1980-01-01
    return stamp[:6]


class _WheelWriter:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.records = []
        self.date_time = _date_time()

    def add(self, name, data, executable=False):
        info = zipfile.ZipInfo(name, self.date_time)
        info.external_attr = (0o755 if executable else 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.records.append(f"{name},sha256={digest},{len(data)}")

    def close(self, record_name):
        self.records.append(f"{record_name},,")
        info = zipfile.ZipInfo(record_name, self.date_time)
        info.external_attr = 0o644 << 16
        self.zip.writestr(info, "\n".join(self.records) + "\n", compress_type=zipfile.ZIP_DEFLATED)
        self.zip.close()


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def _build_info(version, cuda, arguments):
    return (f'"""How this copy of portable_aclnn was built (written by the build backend)."""\n\n'
            f"VERSION = {version!r}\nLIBRARIES_BUNDLED = True\nCUDA = {cuda!r}\nCMAKE_ARGUMENTS = {arguments!r}\n")


# ----------------------------------------------------------------------------------------------------------------
# PEP 517 hooks

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    root, package_parent = _layout()
    version = _version(package_parent)
    dist_info = f"{NAME}-{version}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    tag = f"py3-none-{_platform_tag()}" if root else "py3-none-any"
    for name, text in (("METADATA", _metadata(version)), ("WHEEL", _wheel_file(tag, root is None)),
                       ("top_level.txt", NAME + "\n")):
        with open(os.path.join(metadata_directory, dist_info, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    root, package_parent = _layout()
    version = _version(package_parent)
    pure = root is None
    tag = "py3-none-any" if pure else f"py3-none-{_platform_tag()}"
    wheel_name = f"{NAME}-{version}-{tag}.whl"
    dist_info = f"{NAME}-{version}.dist-info"
    stage = tempfile.mkdtemp(prefix="portable-aclnn-stage-")
    try:
        libraries = []
        if not pure:
            started = time.monotonic()
            lib_dir, cuda, arguments = _build_libraries(root, config_settings, stage)
            _log(f"libraries built in {time.monotonic() - started:.0f} s (CUDA backend: {'ON' if cuda else 'OFF'})")
            for name in LIBRARIES:
                # The file the soname names (a link to lib<name>.so.<version> in the install): wheels hold no links.
                path = os.path.join(lib_dir, f"lib{name}.so.{SONAME_VERSION}")
                libraries.append((f"{NAME}/lib/lib{name}.so.{SONAME_VERSION}", _read(os.path.realpath(path))))
        os.makedirs(wheel_directory, exist_ok=True)
        path = os.path.join(wheel_directory, wheel_name)
        writer = _WheelWriter(path)
        for name, source in _package_files(package_parent):
            writer.add(name, _read(source))
        if not pure:
            writer.add(f"{NAME}/_build_info.py", _build_info(version, cuda, arguments).encode())
            for name, data in libraries:
                writer.add(name, data, executable=True)
        writer.add(f"{dist_info}/METADATA", _metadata(version).encode())
        writer.add(f"{dist_info}/WHEEL", _wheel_file(tag, pure).encode())
        writer.add(f"{dist_info}/top_level.txt", (NAME + "\n").encode())
        writer.close(f"{dist_info}/RECORD")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    _log(f"wrote {wheel_name} ({os.path.getsize(path) / 1e6:.1f} MB)")
    return wheel_name


_SDIST_SKIP = re.compile(r"(^|/)(\.git|__pycache__|build[^/]*|out|\.gl|\.gpu-debs|\.gpu-prefix|[^/]*\.egg-info)(/|$)")


def build_sdist(sdist_directory, config_settings=None):
    """The source tree as it is (without VCS data and build directories), with pyproject.toml at its root."""
    root, package_parent = _layout()
    top = root or package_parent
    version = _version(package_parent)
    base = f"{NAME}-{version}"
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as archive:
        for directory, subdirectories, names in os.walk(top):
            relative = os.path.relpath(directory, top).replace(os.sep, "/")
            relative = "" if relative == "." else relative + "/"
            subdirectories[:] = sorted(d for d in subdirectories if not _SDIST_SKIP.search(relative + d))
            for name in sorted(names):
                archive.add(os.path.join(directory, name), arcname=f"{base}/{relative}{name}", recursive=False)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata(version).encode()
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return os.path.basename(path)
