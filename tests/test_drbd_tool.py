"""labs.tools.drbd against what DRBD 8.4.11 and drbd-utils 9.22 printed on the lab VM pair."""

import json
from pathlib import Path

import pytest

from labs.errors import UsageError
from labs.tools import drbd, drbd_state

FIXTURES = Path(__file__).parent / "fixtures" / "drbd"
MDSTAT = Path(__file__).parent / "fixtures" / "mdstat"


def proc(name: str) -> drbd_state.ProcDrbd:
    return drbd_state.parse_proc_drbd((FIXTURES / name).read_text(), name)


def status(name: str) -> drbd_state.DrbdStatus:
    return drbd_state.parse_drbdadm_status((FIXTURES / name).read_text(), name)


def pair(protocol: str = "C", **options) -> drbd.DrbdResource:
    return drbd.DrbdResource("r0", (drbd.DrbdHost("vm1", "10.77.0.1", "/dev/vdb"),
                                    drbd.DrbdHost("vm2", "10.77.0.2", "/dev/vdb")),
                             protocol=protocol, **options)


# --- resource files -----------------------------------------------------------------------

def test_resource_file_is_the_one_the_lab_vms_accepted():
    # r0-protocol-C.res is the file drbdadm dump, create-md and up accepted on both VMs.
    assert drbd.resource_file(pair()) == (FIXTURES / "r0-protocol-C.res").read_text()


def test_resource_file_writes_disk_and_net_options_in_their_sections():
    text = drbd.resource_file(pair(
        "A", disk_options={"al-extents": 6007, "disk-flushes": False, "md-flushes": False,
                           "c-plan-ahead": 0, "resync-rate": "40M"},
        net_options={"max-buffers": 8000, "sndbuf-size": 0}))
    net = text[text.index("  net {"):text.index("  disk {")]
    disk = text[text.index("  disk {"):text.index("  on vm1")]
    assert "protocol A;" in net and "max-buffers 8000;" in net and "sndbuf-size 0;" in net
    assert "al-extents 6007;" in disk and "disk-flushes no;" in disk
    assert "md-flushes no;" in disk and "resync-rate 40M;" in disk and "c-plan-ahead 0;" in disk


@pytest.mark.parametrize("resource, message", [
    (pair("D"), "must be A, B or C"),
    (pair(disk_options={"max-buffers": 8000}), "not a DRBD 8.4 disk option (it is a net"),
    (pair(net_options={"al-extents": 3389}), "not a DRBD 8.4 net option (it is a disk"),
    (pair(net_options={"protocol": "A"}), "DrbdResource(protocol=...)"),
    (pair(disk_options={"al-extents": 12}), "outside 67..65534"),
    (pair(disk_options={"c-plan-ahead": 301}), "outside 0..300"),
    (pair(disk_options={"resync-rate": "40M; disk-flushes no"}), "must be one word"),
    (drbd.DrbdResource("r0", (drbd.DrbdHost("vm1", "10.77.0.1", "/dev/vdb"),)),
     "exactly two hosts"),
    (drbd.DrbdResource("r0", (drbd.DrbdHost("vm1", "10.77.0.1", "/dev/vdb"),
                              drbd.DrbdHost("vm1", "10.77.0.2", "/dev/vdb"))), "repeat"),
    (drbd.DrbdResource("r0", (drbd.DrbdHost("vm1", "10.77.0.1", "/dev/vdb"),
                              drbd.DrbdHost("vm2", "10.77.0.1", "/dev/vdb"))),
     "share address and port"),
    (drbd.DrbdResource("r0", (drbd.DrbdHost("vm1", "10.77.0.300", "/dev/vdb"),
                              drbd.DrbdHost("vm2", "10.77.0.2", "/dev/vdb"))),
     "not an IPv4"),
    (drbd.DrbdResource("r0", (drbd.DrbdHost("vm1", "10.77.0.1", "/dev/vdb", device="/dev/sdz"),
                              drbd.DrbdHost("vm2", "10.77.0.2", "/dev/vdb"))), "/dev/drbd0"),
    (drbd.DrbdResource("r0", (drbd.DrbdHost("vm1", "10.77.0.1", "/dev/vdb", node_id=0),
                              drbd.DrbdHost("vm2", "10.77.0.2", "/dev/vdb"))), "DRBD 9 syntax"),
    (drbd.DrbdResource("r 0", pair().hosts), "resource name"),
])
def test_resource_file_refuses_what_drbdadm_would_refuse(resource, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        drbd.resource_file(resource)


def test_resource_file_for_drbd_9_is_refused_not_guessed():
    with pytest.raises(UsageError, match="DRBD 9 resource files are not written"):
        drbd.resource_file(pair(), drbd_major=9)
    with pytest.raises(UsageError, match="unknown DRBD major"):
        drbd.resource_file(pair(), drbd_major=7)


def test_a_host_the_resource_has_no_section_for_is_one_clear_error():
    with pytest.raises(UsageError, match="no host 'vm3'"):
        pair().host("vm3")


# --- commands (each one was run, or dry-run with drbdadm -d, on the lab VMs) ------------------

def test_command_lines():
    assert drbd.create_md_command("r0") == ["drbdadm", "create-md", "--force", "r0"]
    assert drbd.up_command("r0") == ["drbdadm", "up", "r0"]
    assert drbd.down_command("r0") == ["drbdadm", "down", "r0"]
    assert drbd.primary_command("r0") == ["drbdadm", "primary", "r0"]
    assert drbd.primary_command("r0", force=True) == ["drbdadm", "primary", "--force", "r0"]
    assert drbd.secondary_command("r0") == ["drbdadm", "secondary", "r0"]
    assert drbd.adjust_command("r0") == ["drbdadm", "adjust", "r0"]
    assert drbd.net_options_command("r0", protocol="A") == [
        "drbdadm", "net-options", "--protocol=A", "r0"]
    assert drbd.net_options_command("r0", max_buffers=8000) == [
        "drbdadm", "net-options", "--max-buffers=8000", "r0"]
    assert drbd.disk_options_command("r0", c_plan_ahead=0, resync_rate="40M") == [
        "drbdadm", "disk-options", "--c-plan-ahead=0", "--resync-rate=40M", "r0"]
    assert drbd.disk_options_command("r0", disk_flushes=False, md_flushes=False) == [
        "drbdadm", "disk-options", "--disk-flushes=no", "--md-flushes=no", "r0"]
    assert drbd.new_current_uuid_command("r0") == [
        "drbdadm", "new-current-uuid", "--clear-bitmap", "r0"]
    assert drbd.disconnect_command("r0") == ["drbdadm", "disconnect", "r0"]
    assert drbd.connect_command("r0") == ["drbdadm", "connect", "r0"]
    assert drbd.connect_command("r0", discard_my_data=True) == \
        ["drbdadm", "connect", "--discard-my-data", "r0"]
    assert drbd.detach_command("r0") == ["drbdadm", "detach", "r0"]
    assert drbd.attach_command("r0") == ["drbdadm", "attach", "r0"]
    assert drbd.invalidate_command("r0") == ["drbdadm", "invalidate", "r0"]
    assert drbd.status_command() == ["drbdadm", "status", "all"]
    assert drbd.dump_command("r0") == ["drbdadm", "dump", "r0"]
    assert drbd.dry_run(drbd.up_command("r0")) == ["drbdadm", "-d", "up", "r0"]


def test_commands_refuse_bad_input():
    with pytest.raises(UsageError, match="must be A, B or C"):
        drbd.net_options_command("r0", protocol="c")
    with pytest.raises(UsageError, match="nothing to change"):
        drbd.net_options_command("r0")
    with pytest.raises(UsageError, match="not a DRBD 8.4 disk option"):
        drbd.disk_options_command("r0", protocol="A")
    with pytest.raises(UsageError, match="resource name"):
        drbd.up_command("r0; reboot")
    with pytest.raises(UsageError, match="drbdadm command"):
        drbd.dry_run(["drbdsetup", "status"])


# --- which DRBD -----------------------------------------------------------------------------

def test_major_version_and_version_line():
    text = (FIXTURES / "84-loaded-no-resources.proc").read_text()
    assert drbd_state.drbd_major_version(text) == 8
    parsed = proc("84-loaded-no-resources.proc")
    assert parsed.version == drbd_state.DrbdVersion("8.4.11", 1, 86, 101, "B536C32A3EADA868561EFD9")
    assert parsed.version.minor == 4 and parsed.minors == {}


def test_major_version_refuses_text_without_a_version_line():
    with pytest.raises(drbd.DrbdError, match="no 'version: X.Y.Z' line"):
        drbd_state.drbd_major_version((FIXTURES / "status-84-primary-uptodate-vm1.txt").read_text())


# --- /proc/drbd ------------------------------------------------------------------------------

def test_after_create_md_and_up_both_inconsistent():
    minor = proc("84-connected-secondary-inconsistent.proc").minor(0)
    assert (minor.connection, minor.role, minor.peer_role) == ("Connected", "Secondary",
                                                               "Secondary")
    assert (minor.disk, minor.peer_disk, minor.protocol) == ("Inconsistent", "Inconsistent", "C")
    assert minor.out_of_sync_kib == 1048508 and minor.sync is None
    assert minor.connected and not minor.up_to_date


def test_connected_primary_and_secondary_counters():
    primary = proc("84-connected-primary-uptodate-vm1.proc").minor(0)
    assert primary.up_to_date and primary.role == "Primary" and primary.peer_role == "Secondary"
    assert (primary.sent_kib, primary.received_kib, primary.disk_read_kib) == (1048508, 0,
                                                                               1048508)
    assert primary.activity_log_writes == 8 and primary.epochs == 1
    assert primary.write_ordering == "flush" and primary.io_flags == "r-----"
    assert not primary.suspended
    secondary = proc("84-connected-secondary-uptodate-vm2.proc").minor(0)
    assert secondary.received_kib == secondary.disk_write_kib == 1048508
    assert secondary.role == "Secondary" and secondary.peer_role == "Primary"


def test_protocol_letter_follows_net_options():
    assert proc("84-protocol-A-vm1.proc").minor(0).protocol == "A"
    assert proc("84-protocol-B-vm1.proc").minor(0).protocol == "B"


def test_standalone_has_no_protocol_and_counts_out_of_sync():
    minor = proc("84-standalone-primary-oos-vm1.proc").minor(0)
    assert minor.connection == "StandAlone" and minor.protocol is None
    assert (minor.peer_role, minor.peer_disk) == ("Unknown", "DUnknown")
    assert minor.out_of_sync_kib == 40960 and minor.disk_write_kib == 40960
    assert not minor.connected


def test_waiting_for_connection_and_diskless():
    waiting = proc("84-wfconnection-secondary-vm2.proc").minor(0)
    assert waiting.connection == "WFConnection" and waiting.protocol == "C"
    diskless = proc("84-diskless-secondary-vm2.proc").minor(0)
    assert (diskless.disk, diskless.peer_disk) == ("Diskless", "UpToDate")
    primary = proc("84-primary-peer-diskless-oos-vm1.proc").minor(0)
    assert primary.peer_disk == "Diskless" and primary.out_of_sync_kib == 4000


def test_secondary_secondary():
    minor = proc("84-secondary-secondary-uptodate-vm1.proc").minor(0)
    assert (minor.role, minor.peer_role) == ("Secondary", "Secondary") and minor.up_to_date


def test_two_minors_with_a_gap_and_a_suspended_activity_log():
    parsed = proc("84-two-minors-gap-vm1.proc")
    assert sorted(parsed.minors) == [0, 2]
    assert parsed.minor(2).io_flags == "r----s" and parsed.minor(2).disk == "Inconsistent"
    with pytest.raises(drbd.DrbdError, match=r"no minor 1 \(minors: 0, 2\)"):
        parsed.minor(1)


def test_lines_printed_before_the_version_are_skipped():
    parsed = proc("84-verbose-up-then-proc-vm2.proc")
    assert parsed.skipped_before[0] == "drbdsetup-84 new-resource r0"
    assert len(parsed.skipped_before) == 5
    assert parsed.minor(0).connection == "WFConnection"


def test_full_sync_progress_on_the_source():
    minor = proc("84-syncsource-full-vm1.proc").minor(0)
    assert minor.connection == "SyncSource" and minor.peer_disk == "Inconsistent"
    sync = minor.sync
    assert (sync.kind, sync.percent, sync.remaining_kib, sync.total_kib) == (
        "sync'ed", 53.6, 488048, 1048508)
    assert (sync.finish_s, sync.speed_kib_s, sync.average_kib_s) == (220, 2188, 2616)
    assert sync.want_kib_s is None  # the kernel prints `want:` on the SyncTarget only
    assert sync.done_kib == 1048508 - 488048 and not sync.stalled


def test_full_sync_progress_on_the_target_shows_the_controller_target():
    sync = proc("84-synctarget-full-vm2.proc").minor(0).sync
    assert sync.want_kib_s == 0 and sync.finish_s == 289
    fixed = proc("84-full-sync-fixed-40M-synctarget-vm2.proc").minor(0).sync
    assert fixed.want_kib_s == 40960 and fixed.speed_kib_s == 8872  # "8,872" with a comma
    start = proc("84-full-sync-syncsource-start-vm1.proc").minor(0).sync
    assert start.percent == 0.4 and start.finish_s == 19 * 60 + 21


def test_small_resync_percent_is_coarse_so_use_done_fraction():
    sync = proc("84-bitmap-resync-after-attach-coarse-percent-vm2.proc").minor(0).sync
    assert sync.percent == 100.0  # what the kernel printed at the start of a 4000 KiB resync
    assert (sync.remaining_kib, sync.total_kib) == (3936, 4000)
    assert sync.done_fraction == pytest.approx(64 / 4000)
    partial = proc("84-resync-synctarget-want-vm2.proc").minor(0).sync
    assert partial.percent == 18.2 and partial.done_fraction == pytest.approx(3804 / 40960)


def test_wfsyncuuid_between_connect_and_resync():
    minor = proc("84-wfsyncuuid-after-connect-vm2.proc").minor(0)
    assert minor.connection == "WFSyncUUID" and minor.disk == "Outdated"
    assert minor.out_of_sync_kib == 40960 and minor.sync is None


@pytest.mark.parametrize("text, message", [
    ((MDSTAT / "vm-no-arrays.mdstat").read_text(), "no 'version: X.Y.Z' line"),
    ("", "no 'version: X.Y.Z' line"),
    # a real capture cut after the progress bar: the finish line is missing
    ((FIXTURES / "84-syncsource-full-vm1.proc").read_text().rsplit("\n\tfinish", 1)[0],
     "progress line without its 'finish"),
    # a real capture cut inside the counters line
    ((FIXTURES / "84-connected-primary-uptodate-vm1.proc").read_text()[:-20],
     "counters .* missing"),
    # /proc/drbd followed by mdstat: the first unknown line is named
    ((FIXTURES / "84-protocol-A-vm1.proc").read_text()
     + (MDSTAT / "vm-no-arrays.mdstat").read_text(), "line 5: cannot read 'Personalities"),
])
def test_proc_drbd_garbage_is_one_line_error(text, message):
    with pytest.raises(drbd.DrbdError, match=message) as error:
        drbd_state.parse_proc_drbd(text, "test")
    assert "\n" not in str(error.value) and str(error.value).startswith("test")


# --- drbdadm status ------------------------------------------------------------------------

def test_status_connected_primary():
    resource = status("status-84-primary-uptodate-vm1.txt").resource("r0")
    assert resource.role == "Primary" and resource.disk == "UpToDate"
    peer = resource.peer()
    assert peer.name == "peer" and peer.role == "Secondary" and peer.connection == "Connected"
    assert peer.peer_devices[0].replication == "Established"
    assert peer.peer_devices[0].peer_disk == "UpToDate"
    assert peer.peer_devices[0].done_percent is None


def test_status_during_full_sync_on_both_sides():
    source = status("status-84-syncsource-vm1.txt").resource("r0").peer().peer_devices[0]
    assert (source.replication, source.peer_disk, source.done_percent) == (
        "SyncSource", "Inconsistent", 50.84)
    target = status("status-84-synctarget-vm2.txt").resource("r0")
    assert target.disk == "Inconsistent"
    assert target.peer().peer_devices[0].replication == "SyncTarget"
    assert target.peer().peer_devices[0].done_percent == 49.08


def test_status_states_without_a_connection():
    standalone = status("status-84-standalone-vm1.txt").resource("r0")
    assert standalone.connections == [] and standalone.role == "Primary"
    with pytest.raises(drbd.DrbdError, match="has no peer"):
        standalone.peer()
    connecting = status("status-84-connecting-vm2.txt").resource("r0").peer()
    assert connecting.connection == "Connecting" and connecting.peer_devices == []
    assert status("status-84-diskless-vm2.txt").resource("r0").disk == "Diskless"
    peer = status("status-84-peer-diskless-vm1.txt").resource("r0").peer()
    assert peer.peer_devices[0].peer_disk == "Diskless"
    inconsistent = status("status-84-connected-secondary-inconsistent.txt").resource("r0")
    assert inconsistent.disk == "Inconsistent" and inconsistent.peer().role == "Secondary"
    both = status("status-84-secondary-secondary-vm1.txt").resource("r0")
    assert both.role == both.peer().role == "Secondary"
    assert status("status-84-secondary-uptodate-vm2.txt").resource("r0").peer().role == "Primary"


def test_status_two_resources():
    parsed = status("status-84-two-resources-vm1.txt")
    assert list(parsed.resources) == ["r0", "r1"]
    assert parsed.resource("r1").disk == "Inconsistent"
    with pytest.raises(drbd.DrbdError, match=r"no resource r2 \(resources: r0, r1\)"):
        parsed.resource("r2")


def test_status_verbose_statistics_continuation_lines():
    resource = status("status-84-syncsource-verbose-statistics-vm1.txt").resource("r0")
    assert resource.fields == {"role": "Primary", "suspended": "no", "write-ordering": "flush"}
    device = resource.devices[0]
    assert device.volume == 0 and device.fields["minor"] == "0"
    assert device.fields["read"] == "2643392" and device.fields["blocked"] == "no"
    peer = resource.peer()
    assert peer.fields == {"connection": "Connected", "role": "Secondary", "congested": "no"}
    (volume,) = peer.peer_devices
    assert volume.done_percent == 52.11 and volume.fields["resync-suspended"] == "no"
    assert volume.out_of_sync_kib == 502132 and volume.fields["sent"] == "2643392"
    alone = status("status-84-standalone-oos-verbose-statistics-vm1.txt").resource("r0")
    assert alone.devices[0].fields["written"] == "40960" and alone.connections == []
    assert status("status-84-drbdsetup-verbose-statistics-vm1.txt").resource("r0").peer(
        "peer").peer_devices[0].out_of_sync_kib == 0


def test_status_skips_the_command_drbdadm_verbose_echoes():
    parsed = status("status-84-verbose-vm1.txt")
    assert parsed.skipped_before == ["drbdsetup-84 status r0"]
    assert parsed.resource("r0").peer().peer_devices[0].peer_disk == "UpToDate"


@pytest.mark.parametrize("text, message", [
    ((FIXTURES / "84-protocol-A-vm1.proc").read_text(), "line 1 is not a resource line"),
    ((MDSTAT / "vm-degraded-slow-leg-removed.mdstat").read_text(),
     "line 1 is not a resource line"),
    ("\n".join((FIXTURES / "status-84-primary-uptodate-vm1.txt").read_text().splitlines()[1:]),
     "line 1 is indented before any resource line"),
])
def test_status_garbage_is_one_line_error(text, message):
    with pytest.raises(drbd.DrbdError, match=message) as error:
        drbd_state.parse_drbdadm_status(text, "test")
    assert "\n" not in str(error.value)


# --- either, as JSON ----------------------------------------------------------------------

def test_parse_drbd_tells_the_two_apart_and_as_json_is_json():
    synced = drbd_state.parse_drbd((FIXTURES / "84-synctarget-full-vm2.proc").read_text())
    document = json.loads(json.dumps(drbd_state.as_json(synced)))
    assert document["kind"] == "proc_drbd" and document["major"] == 8
    entry = document["minors"]["0"]
    assert entry["connection"] == "SyncTarget" and entry["connected"] is True
    assert entry["sync"]["done_kib"] == 1048508 - 480908
    assert entry["sync"]["remaining_kib"] == 480908
    text = (FIXTURES / "status-84-syncsource-vm1.txt").read_text()
    document = json.loads(json.dumps(drbd_state.as_json(drbd_state.parse_drbd(text))))
    assert document["kind"] == "drbdadm_status"
    assert document["resources"]["r0"]["connections"][0]["peer_devices"][0]["done"] == "50.84"
    with pytest.raises(drbd.DrbdError, match="empty"):
        drbd_state.parse_drbd("\n")
    with pytest.raises(UsageError, match="cannot convert"):
        drbd_state.as_json({"not": "parsed"})


def test_skip_initial_sync_and_survivor_after_peer_loss():
    skipped = proc("84-skip-initial-sync-new-current-uuid-vm2.proc").minor(0)
    assert skipped.up_to_date and skipped.out_of_sync_kib == 0 and skipped.sync is None
    assert skipped.received_kib == 0  # nothing was copied
    assert status("status-84-skip-initial-sync-vm2.txt").resource("r0").peer(
        ).peer_devices[0].peer_disk == "UpToDate"
    survivor = proc("84-survivor-promoted-peer-killed-vm2.proc").minor(0)
    assert (survivor.connection, survivor.role, survivor.peer_role) == (
        "WFConnection", "Primary", "Unknown")
    assert survivor.disk == "UpToDate" and survivor.peer_disk == "DUnknown"
    assert survivor.received_kib == 512  # the drill's 128 records of 4 KiB
    resource = status("status-84-survivor-primary-peer-gone-vm2.txt").resource("r0")
    assert resource.role == "Primary" and resource.peer().connection == "Connecting"
