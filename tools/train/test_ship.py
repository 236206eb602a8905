"""Tests of ship.py (run by .ci/run with the miner's tests): shipping the committed model's
own files writes exactly the committed manifest, every field included."""

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ship  # noqa: E402

NAME = "sextant-code-small-v1-int8"


class Manifest(unittest.TestCase):
    def test_shipping_the_committed_files_reproduces_the_committed_manifest(self):
        committed = json.loads((ship.REPO / "src/embed/manifests" / f"{NAME}.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp)
            for f in ship.FILES + ["metrics.json"]:
                (run / f).symlink_to(ship.REPO / "models" / NAME / f)
            written = ship.manifest(NAME, run, committed["score_spread"])
        self.assertEqual(written, committed)

    def test_a_missing_or_meaningless_spread_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            for spread in [0.0, -1.0, float("nan"), 1e30]:
                with self.assertRaises(SystemExit):
                    ship.manifest(NAME, Path(tmp), spread)


if __name__ == "__main__":
    unittest.main()
