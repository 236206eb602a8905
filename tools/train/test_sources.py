"""Tests of the other registries' miner (run by .ci/run: `python3 -m unittest discover -s tools/train`).

The code side's documentation removal is Sextant's own (`src/dev/pairs.rs`) and tested there.
"""

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mine  # noqa: E402
import sources  # noqa: E402


class Licences(unittest.TestCase):
    def test_each_registrys_spelling_of_a_permissive_licence_is_kept(self):
        for licence in ["MIT", "MIT OR Apache-2.0", "Apache-2.0/MIT", "Expat", "BSD-3-clause",
                        "Apache Software License", "Unlicense OR MIT", "(MIT OR Apache-2.0) "]:
            self.assertTrue(sources.licence_allowed(licence), licence)

    def test_copyleft_unknown_and_mixed_licences_are_refused(self):
        for licence in ["GPL-3.0", "LGPL-2.1+", "MPL-2.0", "", "MIT AND GPL-2.0", "EPL-1.0",
                        "Custom"]:
            self.assertFalse(sources.licence_allowed(licence), licence)

    def test_debian_copyright_gives_the_licence_of_all_files(self):
        text = ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
                "Upstream-Name: x\n\nFiles: *\nCopyright: 2020 A\nLicense: Apache-2.0\n\n"
                "Files: debian/*\nLicense: GPL-2+\n")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "copyright"
            path.write_text(text)
            self.assertEqual(sources.debian_licence(path), "Apache-2.0")
            self.assertEqual(sources.debian_licence(Path(tmp) / "missing"), "")


class Reserved(unittest.TestCase):
    def test_reserved_sources_are_named_as_their_registry_names_them(self):
        reserved = mine.read_reserved()
        self.assertTrue(mine.is_excluded(sources.source_name("crate", "tokio-util@0.7.1"), reserved))
        self.assertTrue(mine.is_excluded(sources.source_name("pypi", "requests==2.32.0"), reserved))
        self.assertFalse(mine.is_excluded(sources.source_name("crate", "itertools@0.15.0"), reserved))
        self.assertFalse(mine.is_excluded(sources.source_name("pypi", "werkzeug==3.1.9"), reserved))

    def test_vendored_copies_of_reserved_packages_are_dropped(self):
        pairs = [
            {"path": "pip/_vendor/requests/api.py"},
            {"path": "vendor/github.com/gin-gonic/gin/context.go"},
            {"path": "src/requests_helper.py"},
            {"path": "lib/api.py"},
        ]
        kept = sources.drop_vendored_dirs(pairs, mine.read_reserved())
        self.assertEqual([p["path"] for p in kept], ["src/requests_helper.py", "lib/api.py"])

    def test_the_sources_list_names_nothing_reserved(self):
        reserved = mine.read_reserved()
        for line in (Path(__file__).resolve().parent / "sources.tsv").read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                language, kind, spec = line.split("\t")[:3]
                self.assertIn(kind, sources.FETCH, line)
                self.assertFalse(mine.is_excluded(sources.source_name(kind, spec), reserved), line)


if __name__ == "__main__":
    unittest.main()
