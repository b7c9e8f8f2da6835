import os
import sys
from pathlib import Path

import pytest

from softsnake.sim.model import quiet_warp

quiet_warp()
sys.path.insert(0, str(Path(__file__).parent))  # test modules import helpers.py, rigid_helpers.py, cli_helpers.py

ROOT = Path(__file__).resolve().parents[1]
#: a file that only the vine reference data folder holds (data README: Jitosho et al. 2021, Fig. 7)
VINE_DATA_MARKER = "jitosho_wall_fit.npz"


def vine_data_dir() -> Path | None:
    """The vine reference data folder (julia_rollouts/, real_video/, jitosho_wall_fit.npz; assets/vine/README.md), or
    None. Looked for in assets/vine, then in any folder under assets/ that holds jitosho_wall_fit.npz."""
    candidates = [ROOT / "assets" / "vine"]
    if (ROOT / "assets").is_dir():
        candidates += sorted(p.parent for p in (ROOT / "assets").rglob(VINE_DATA_MARKER))
    return next((p for p in candidates if (p / VINE_DATA_MARKER).is_file()), None)


def in_ci() -> bool:
    """True on a CI runner (GitHub Actions and most others set CI=true)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require_vine_data() -> Path:
    """The vine data folder; a test that needs it and finds none is skipped on a developer's machine, but fails under
    CI=true, where the data is part of the checkout and its absence is a packaging error, not a reason to skip."""
    path = vine_data_dir()
    if path is None:
        message = f"vine reference data not found under {ROOT / 'assets'}"
        if in_ci():
            pytest.fail(message + "; under CI=true a data-dependent test fails instead of skipping", pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture
def vine_data() -> Path:
    return require_vine_data()


@pytest.fixture(scope="session")
def device():
    return "cpu"
