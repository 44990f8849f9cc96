"""A release a user can publish: a sandbox build's export, its public folder loaded as it is with
the ``datasets`` package (offline, every cache under tmp), gives every instance of the export and
nothing of the private side; and the hub card names no target.

The loading runs in a child process whose home and Hugging Face folders are under tmp, so this
test needs no network and proves it writes nothing outside tmp."""

from __future__ import annotations

import dataclasses
import hmac
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from inspire_build import boundary, exports, pipeline
from inspire_build.sandbox import server, world
from inspire_build.sources import make_client
from inspire_build.tables import versions
from tests.conftest import new_warehouse

TARGETS = 16
KEY = SecretStr("5a" * 32)
PRIVATE_COLUMNS = {"paper_id", "target_id", "tier", "role", "rationale", "title", "abstract"}

LOADER = """
import json, sys
import datasets

folder = sys.argv[1]
builder = datasets.load_dataset_builder(folder)
loaded = datasets.load_dataset(folder)
print(json.dumps({
    "files": sorted(str(f) for files in builder.config.data_files.values() for f in files),
    "splits": {
        name: {
            "columns": part.column_names,
            "rows": part.to_list(),
            "caches": [c["filename"] for c in part.cache_files],
        }
        for name, part in loaded.items()
    },
}, default=str))
"""


@dataclasses.dataclass(frozen=True)
class Exported:
    out: Path
    version: str
    target_ids: set[str]  # every ID of every target, in every spelling
    titles: list[str]  # each target's title
    needles: set[str]  # what the export's leak scan looks for


def _export(tmp_path: Path) -> Exported:
    """Build eval on a sandbox world and export it."""
    generated = world.generate(world.WorldConfig(seed=1, papers=1200))
    with server.running(generated, server.SandboxConfig(time_scale=1000)) as base:
        settings = server.settings_for(base, warehouse=tmp_path / "w.duckdb", instance_key=KEY)
        con = new_warehouse(tmp_path / "w.duckdb")
        pipeline.build_split(con, make_client(settings, con), settings, "eval", TARGETS)
        exports.export(con, settings, "eval", None, tmp_path / "export", force=True)
    version = versions.latest(con)["eval"]
    spellings = versions.target_spellings(con, version)
    target_ids = {str(i) for t, _, more in spellings for i in [t, *(more or [])] if i}
    # as the leak scan does: a short numeric ID (a small CorpusId) is too common to look for
    target_ids = {i for i in target_ids if not i.isdigit() or len(i) >= exports.MIN_ID_DIGITS}
    titles = [str(title) for _, title, _ in spellings]
    needles = exports.leak_needles(con, version)
    con.close()
    assert len(titles) >= 4  # and the needles find each title: the card attack uses them
    assert all(boundary.found_in(needles, boundary.normal_text(t)) for t in titles)
    return Exported(tmp_path / "export", version, target_ids, titles, needles)


def _load(public: Path, tmp_path: Path) -> dict[str, Any]:
    """``datasets.load_dataset(public)`` in a child process: offline, caches and home in tmp."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHONPATH"))}
    env |= {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_DATASETS_CACHE": str(tmp_path / "hf-datasets"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", LOADER, str(public)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert [p for p in home.rglob("*") if p.is_file()] == []  # nothing written to the home
    loaded: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_datasets_loads_every_public_instance_and_nothing_private(tmp_path: Path) -> None:
    exported = _export(tmp_path)
    public = exported.out / "public"
    ids = [
        json.loads(line)["instance_id"]
        for line in (public / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(ids) >= 4 and len(set(ids)) == len(ids)
    loaded = _load(public, tmp_path)

    assert list(loaded["splits"]) == ["eval"]
    split = loaded["splits"]["eval"]
    assert split["columns"] == ["instance_id", "brief", "cutoff"]
    assert not PRIVATE_COLUMNS & set(split["columns"])
    assert sorted(row["instance_id"] for row in split["rows"]) == sorted(ids)
    parquet = (public / "instances.parquet").resolve()
    assert [Path(f).resolve() for f in loaded["files"]] == [parquet]
    assert all(Path(c).is_relative_to(tmp_path / "hf-datasets") for c in split["caches"])

    # Nothing of the private side in what was loaded: no antecedent, no target, no gold tier.
    qrels = (exported.out / "private" / "qrels.trec").read_text(encoding="utf-8").splitlines()
    antecedents = {line.split()[2] for line in qrels}
    assert antecedents
    values = [str(v) for row in split["rows"] for v in row.values()]
    assert not [v for v in values for i in antecedents | exported.target_ids if i in v]
    assert sorted(p.name for p in public.iterdir()) == sorted(
        [exports.HUB_CARD, *exports.PUBLIC_FILES]
    )
    card = (public / exports.HUB_CARD).read_text(encoding="utf-8")
    assert exported.version in card
    _attack_the_card(card, exported)
    # The competitor hashes every spelling of every target's ID under what the hub shows (the
    # version, the split, the card's words) against the loaded instance IDs: none comes back.
    shown = {exported.version, "eval", *card.split()}
    attack = boundary.hash_attack(
        [row["instance_id"] for row in split["rows"]], exported.target_ids, shown, exported.version
    )
    assert attack.tried > 0 and attack.recovered == {}
    keyed = {  # the same attack, given the secret key: it must then recover every instance
        "hmac": lambda p, v, c: hmac.new(
            bytes.fromhex(p), f"instance:{v}:{c}".encode(), "sha256"
        ).hexdigest()
    }
    key = KEY.get_secret_value()
    leaked = boundary.hash_attack(ids, exported.target_ids, {key}, exported.version, keyed)
    assert len(leaked.recovered) == len(ids)  # the attack is live: the key would give them all


def _attack_the_card(text: str, exported: Exported) -> None:
    """A competitor reads the hub card for a target: no ID of one, raw or in normal form, no
    title nor any needle of the leak scan (title 6-grams, T3 titles), no private file named."""
    normal = boundary.normal_text(text)
    assert not [i for i in exported.target_ids if i in text or boundary.normal_text(i) in normal]
    assert not [t for t in exported.titles if boundary.normal_text(t) in normal]
    assert boundary.found_in(exported.needles, normal) == []
    assert not [w for w in ("qrels", "antecedents.", "targets.", "private") if w in text]
