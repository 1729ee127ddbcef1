import pytest
import yaml

from lab import LabError, hosts
from lab.hosts import inventory_text, names, validate


def test_names_are_padded_and_sorted():
    assert names("h", 3) == ["h-01", "h-02", "h-03"]
    assert names("h", 120)[0] == "h-001"


def test_inventory():
    groups = {"h": {"h-02": "10.0.0.3", "h-01": "10.0.0.2"}, "gpufleet-demo": {"gpufleet-demo-1": "10.0.0.9"}}
    doc = yaml.safe_load(inventory_text(groups, "/k/id"))
    group = doc["all"]["children"]["lab_hosts"]
    children = group["children"]
    assert children["h"]["hosts"] == {
        "h-01": {"ansible_host": "10.0.0.2"},
        "h-02": {"ansible_host": "10.0.0.3"},
    }
    assert children["gpufleet_demo"]["hosts"] == {"gpufleet-demo-1": {"ansible_host": "10.0.0.9"}}
    assert group["vars"]["ansible_user"] == "root"
    assert group["vars"]["ansible_ssh_private_key_file"] == "/k/id"
    assert group["vars"]["ansible_python_interpreter"] == "/usr/bin/python3"
    assert group["vars"]["lab_mirror_url"] == "http://gpufleet-mirror"


@pytest.mark.parametrize(
    "count,image,prefix,needle",
    [
        (0, "gpufleet/debian12-systemd", "h", "--count 0"),
        (1000, "gpufleet/debian12-systemd", "h", "--count 1000"),
        (1, "gpufleet/debian12", "h", "-systemd"),
        (1, "centos7", "h", "unknown image"),
        (1, "gpufleet/debian12-systemd", "bad_name!", "--prefix"),
    ],
)
def test_bad_input_is_one_line(count, image, prefix, needle):
    with pytest.raises(LabError) as err:
        validate(count, image, prefix)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


# -- lab hosts belong to the lab directory (checkout) that made them -----------------------------------------
class FakeContainer:
    def __init__(self, name, labels, ip):
        self.name, self.labels, self.removed = name, labels, False
        self.attrs = {"NetworkSettings": {"Networks": {"gpufleet-lab": {"IPAddress": ip}}}}

    def remove(self, **_):
        self.removed = True


class FakeContainers:
    def __init__(self, found):
        self.found = found

    def list(self, **kwargs):
        key, _, value = kwargs["filters"]["label"].partition("=")
        return [c for c in self.found if not c.removed and c.labels.get(key) == value]


class FakeClient:
    def __init__(self, found):
        self.containers = FakeContainers(found)


@pytest.fixture
def two_labs(tmp_path, monkeypatch):
    """This checkout's lab (mine), another checkout's on the same machine, and a host from before labels."""
    mine, theirs = tmp_path / "a" / ".lab", tmp_path / "b" / ".lab"
    monkeypatch.setattr(hosts, "STATE", mine)
    monkeypatch.setattr(hosts, "INVENTORY", mine / "inventory.yml")
    monkeypatch.setattr(hosts, "KEY", mine / "ssh" / "id_ed25519")
    found = [
        FakeContainer(hosts.container_name("h-01"), hosts.host_labels("h-01", "h", "img"), "10.0.0.2"),
        FakeContainer(
            hosts.container_name("h-01", theirs), hosts.host_labels("h-01", "h", "img", theirs), "10.0.0.3"
        ),
        FakeContainer("h-02", {"gpufleet.lab": "host", "gpufleet.prefix": "h"}, "10.0.0.4"),
    ]
    return mine, theirs, found


def test_container_names_differ_per_lab_directory(two_labs):
    mine, theirs, _ = two_labs
    assert hosts.container_name("h-01", mine) != hosts.container_name("h-01", theirs)
    assert hosts.container_name("h-01", mine).startswith("h-01.")
    assert hosts.container_name("h-01") == hosts.container_name("h-01", mine)


def test_a_lab_sees_only_its_own_hosts(two_labs):
    mine, theirs, found = two_labs
    client = FakeClient(found)
    assert [hosts.host_name(c) for c in hosts.lab_hosts(client)] == ["h-01"]
    assert hosts.lab_hosts(client)[0].labels["gpufleet.lab_dir"] == str(mine)
    assert [c.name for c in hosts.lab_hosts(client, lab_dir=theirs)] == [hosts.container_name("h-01", theirs)]
    assert [c.name for c in hosts.foreign_hosts(client)] == sorted(
        [hosts.container_name("h-01", theirs), "h-02"]
    )
    assert hosts.lab_hosts(client, prefix="other") == []


def test_inventory_lists_only_this_labs_hosts_and_key(two_labs):
    mine, _, found = two_labs
    path = hosts.refresh_inventory(FakeClient(found))
    doc = yaml.safe_load(path.read_text())
    group = doc["all"]["children"]["lab_hosts"]
    assert group["children"]["h"]["hosts"] == {"h-01": {"ansible_host": "10.0.0.2"}}
    assert group["vars"]["ansible_ssh_private_key_file"] == str(mine / "ssh" / "id_ed25519")


def test_down_removes_only_this_labs_hosts(two_labs):
    _, _, found = two_labs
    assert hosts.down(FakeClient(found), log=lambda _: None) == 1
    assert [c.removed for c in found] == [True, False, False]
    assert not hosts.INVENTORY.exists()
