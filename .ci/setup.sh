# Sourced by .ci/test and .ci/demo: installs what mcudeploy needs on a Debian/Ubuntu machine
# (apt: C compilers and QEMU; PyPI: the project and its test tools in .venv), then activates .venv.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

need_apt=()
command -v gcc >/dev/null || need_apt+=(gcc libc6-dev)
command -v arm-none-eabi-gcc >/dev/null || need_apt+=(gcc-arm-none-eabi)
[ -e /usr/lib/arm-none-eabi/newlib/libc.a ] || [ -e /usr/lib/arm-none-eabi/lib/libc.a ] || need_apt+=(libnewlib-arm-none-eabi)
command -v qemu-system-arm >/dev/null || need_apt+=(qemu-system-arm)
# the RISC-V board qemu-rv32: its emulator (qemu-system-riscv32), its compiler and C library (picolibc)
command -v qemu-system-riscv32 >/dev/null || need_apt+=(qemu-system-misc)
command -v riscv64-unknown-elf-gcc >/dev/null || need_apt+=(gcc-riscv64-unknown-elf)
[ -e /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs ] || need_apt+=(picolibc-riscv64-unknown-elf)
# the generated folder is built as a CMake library in its tests
command -v cmake >/dev/null || need_apt+=(cmake)
command -v make >/dev/null || need_apt+=(make)
# the Arduino library's example sketch (C++) is built and run on the host in its tests
command -v g++ >/dev/null || need_apt+=(g++)
# headless Chromium renders the HTML report in its tests
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need_apt+=(chromium)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
# a user's machine (CI sets CI and never uploads to a real board): `mcudeploy flash` onto a Nucleo
# board's ST-LINK uploads with OpenOCD, or st-flash (firmware/platformio/builder/main.py)
if [ -z "${CI:-}" ]; then
    command -v openocd >/dev/null || need_apt+=(openocd)
    command -v st-flash >/dev/null || need_apt+=(stlink-tools)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing ${need_apt[*]} with apt"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

VENV="${MCUDEPLOY_VENV:-$ROOT/.venv}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
stamp="$VENV/.mcudeploy-installed"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    echo "setup: installing mcudeploy and its test tools into $VENV"
    python -m pip install -q --upgrade pip
    # farm: labgrid, for the farm test's coordinator and exporter (tests/search/test_tune_pool_qemu.py)
    python -m pip install -q -e "$ROOT[test,farm]"
    touch "$stamp"
fi
