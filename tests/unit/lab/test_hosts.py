import pytest
import yaml

from lab import LabError
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
