"""Tests of ship.py (run by .ci/run with the miner's tests): shipping the committed model's
own files writes exactly the committed manifest, every field included."""

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ship  # noqa: E402

NAME = "sextant-code-small-v2-int8"


class Manifest(unittest.TestCase):
    def test_shipping_the_committed_files_reproduces_the_committed_manifest(self):
        committed = json.loads((ship.REPO / "src/embed/manifests" / f"{NAME}.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp)
            for f in ship.FILES + ["metrics.json"]:
                (run / f).symlink_to(ship.REPO / "models" / NAME / f)
            written = ship.manifest(NAME, run, committed["score_spread"])
        self.assertEqual(written, committed)

    def test_the_first_models_manifest_is_kept_as_it_shipped(self):
        # v1 was shipped by ship.py before it described six languages: its manifest stays
        # byte for byte, so that its files' hashes and its description still match.
        v1 = json.loads((ship.REPO / "src/embed/manifests/sextant-code-small-v1-int8.json").read_text())
        self.assertEqual(v1["files"]["model.onnx"], ship.sha256(ship.REPO / "models/sextant-code-small-v1-int8/model.onnx"))
        self.assertEqual(v1["score_spread"], 1.4)

    def test_a_missing_or_meaningless_spread_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            for spread in [0.0, -1.0, float("nan"), 1e30]:
                with self.assertRaises(SystemExit):
                    ship.manifest(NAME, Path(tmp), spread)


if __name__ == "__main__":
    unittest.main()
