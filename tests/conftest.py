import sys
from pathlib import Path

import pytest
import warp as wp

wp.config.quiet = True
sys.path.insert(0, str(Path(__file__).parent))  # for tests/reference.py


@pytest.fixture(scope="session")
def device():
    return "cpu"
