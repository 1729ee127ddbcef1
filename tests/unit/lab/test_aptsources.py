import pytest

from lab import LabError
from lab.aptsources import debian_mirror, parse_deb822, parse_one_line, read_sources

DEB822 = """\
Types: deb
# a comment inside the stanza
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main

Enabled: no
Types: deb
URIs: http://disabled.example/debian
Suites: trixie
Components: main

Types: deb
URIs: https://vendor.example/apt
Suites: nodistro
Components: main
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 xyz
 -----END PGP PUBLIC KEY BLOCK-----
"""

ONE_LINE = """\
# comment
deb http://mirror.example/debian bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] http://mirror.example/debian bookworm-updates main
deb-src http://mirror.example/debian bookworm main
deb http://mirror.example/debian-security bookworm-security main # trailing comment

deb https://packages.vendor.example/apt cloud-sdk main
"""


def test_deb822_stanzas_and_disabled():
    sources = parse_deb822(DEB822)
    assert [s.uris for s in sources] == [
        ["http://mirror.example/debian"],
        ["http://mirror.example/debian-security"],
        ["https://vendor.example/apt"],
    ]
    assert sources[0].suites == ["bookworm", "bookworm-updates"]
    assert sources[0].components == ["main", "contrib"]
    assert sources[1].types == ["deb", "deb-src"]


def test_one_line_with_options_and_comments():
    sources = parse_one_line(ONE_LINE)
    assert len(sources) == 5
    assert sources[1].uris == ["http://mirror.example/debian"]
    assert sources[1].suites == ["bookworm-updates"]
    assert sources[2].types == ["deb-src"]
    assert sources[3].components == ["main"]


@pytest.mark.parametrize("text,parse", [(DEB822, parse_deb822), (ONE_LINE, parse_one_line)])
def test_debian_mirror_found(text, parse):
    found = debian_mirror(parse(text))
    assert found.archive == "http://mirror.example/debian"
    assert found.security == "http://mirror.example/debian-security"


def test_debian_mirror_missing_is_one_line_advice():
    with pytest.raises(LabError) as err:
        debian_mirror(parse_one_line("deb https://vendor.example/apt nodistro main\n"))
    assert "\n" not in str(err.value)
    assert "sources.list" in str(err.value)


def test_read_sources_reads_list_and_sources_files(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text("deb http://a.example/debian bookworm main\n")
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822)
    (tmp_path / "sources.list.d" / "x.list.disabled").write_text("deb http://no.example/debian sid main\n")
    uris = [s.uris[0] for s in read_sources(str(tmp_path))]
    assert uris[0] == "http://a.example/debian"
    assert "http://mirror.example/debian" in uris
    assert not any("no.example" in u for u in uris)
