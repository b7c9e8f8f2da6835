import sys
from pathlib import Path

import pytest
from softsnake.sim.model import quiet_warp

quiet_warp()
sys.path.insert(0, str(Path(__file__).parent))  # for tests/reference.py


@pytest.fixture(scope="session")
def device():
    return "cpu"
