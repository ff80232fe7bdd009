"""Where the installed templates, firmware sources and board files are.

They live at the top of the repository and are installed inside the package as
``mcudeploy/data/{templates,firmware,boards}`` (symlinks in a checkout, copies in a wheel).
"""
from pathlib import Path

_DATA = Path(__file__).resolve().parent / "data"


def data_dir(name: str) -> Path:
    path = _DATA / name
    if not path.is_dir():
        raise FileNotFoundError(f"mcudeploy is installed without its {name}/ folder (looked in {path})")
    return path


def templates_dir() -> Path:
    return data_dir("templates")


def firmware_dir() -> Path:
    return data_dir("firmware")


def boards_dir() -> Path:
    return data_dir("boards")
