"""The data in assets/ is what the docs say: every file listed in its folder's README, the snake config equal to the
code's defaults, every config key in the units table of docs/snake.md."""

from __future__ import annotations

import dataclasses
import re

from cli_helpers import ROOT

ASSETS = ROOT / "assets"


def test_every_asset_is_described_in_its_readme():
    for folder in (ASSETS / "vine", ASSETS / "snake"):
        readme = (folder / "README.md").read_text()
        for path in folder.rglob("*"):
            if path.is_file() and path.name != "README.md":
                parts = path.relative_to(folder).parts
                assert any(p in readme for p in (path.name, parts[0])), f"{path} is not in {folder / 'README.md'}"


def test_default_snake_config_is_the_codes_default():
    from softsnake.robots.snake import SnakeConfig

    assert SnakeConfig.from_toml(ASSETS / "snake" / "default.toml") == SnakeConfig()


def test_every_snake_setting_has_a_unit():
    from softsnake.robots.pneumatics import PneumaticsConfig
    from softsnake.robots.snake import SnakeConfig

    doc = (ROOT / "docs" / "snake.md").read_text()
    table = doc[doc.index("## Configuration and units") :]
    table = table[: table.index("\n## ")]
    keys = set(re.findall(r"`(?:\[\w+\] )?(\w+)`", table))
    fields = {f.name for f in dataclasses.fields(SnakeConfig)} - {"pneumatics", "solver"}
    fields |= {f.name for f in dataclasses.fields(PneumaticsConfig)}
    assert fields <= keys, sorted(fields - keys)
