#!/usr/bin/python3
"""gen_platform.py -- writes npusim's SimGrid platforms (XML, DTD version 4.1).

Every platform is one SimGrid <cluster> whose hosts are NPUs: host `speed` is
the NPU's peak dense FLOP/s in bf16, and the <prop> elements inside the cluster
(SimGrid copies them to every host) carry what SimGrid does not model -- the
property names are exactly those of planner/model/cluster.h.  Each NPU has one NIC
link into the scale-out fabric: a 2-level FAT_TREE for the device platforms
(a 3-level tree takes 8-15 s to build in SimGrid 3.32, see docs/design.md), a flat
cluster (one private link per host, no backbone) for the collective tests.
Host names are "npu-<rank>", rank 0..N-1; ranks of one server are
consecutive, so server = rank / npus_per_node.

Usage (python standard library only):
  gen_platform.py --preset 910b --npus 65536 -o /tmp/64k_npu.xml
      fat-tree platform of any size; --npus must be a multiple of the preset's
      npus_per_node (or of --npus-per-node).  Options:
        --preset {910,910b,a100,h100}   device figures (platforms/presets.py)
        --npus N                    number of NPUs (hosts)
        --npus-per-node K           override the preset's server size
        --topo "2;m1,m2;1,w2;1,1"   override the automatic fat-tree shape
        -o FILE                     output (default: stdout)
  gen_platform.py --preset P --npus N --fabric {clos3,rail,torus,dragonfly} ...
      the other fabrics of platforms/fabrics.py (3-tier Clos with oversubscribed
      tiers, rail-optimised with or without PXN, SimGrid TORUS and DRAGONFLY),
      and --scaleup-sim on any fabric: the scale-up fabric as flows
      (docs/platform-format.md, Fabrics).
  gen_platform.py --flat N --bandwidth-Bps B --latency-s A -o FILE
      flat cluster, 1 NPU per node; every host-to-host route has bandwidth B
      and latency A (each private link carries A/2).
  gen_platform.py --free-comm N -o FILE
      "free communication": bandwidths 1e30 B/s, latencies 0, no launch
      overhead, matmul efficiency 1 (for closed-form bubble-ratio tests).
  gen_platform.py --all [DIR]
      regenerates every shipped platform in DIR (default: this script's
      folder).  The shipped XML files are exactly this output; edit the
      presets here, not the XML.
  Errors: one line on standard error naming the option and what it expects;
  exit 2 on a bad command line (a value out of range, sizes that do not fit
  together, an option given where it does not apply -- never ignored; a
  platform simrun would refuse: a link outside its ranges, more than its
  2e6 hosts, switches and links without --allow-large), 1 when the output
  cannot be written.  A file is written whole or not at all: into a
  temporary file in its folder, renamed over the target when complete.  An
  existing file is replaced only when it is a platform this script wrote (or
  empty), never another file.

Automatic fat-tree shape for N hosts: SimGrid's PGFT "2;m1,m2;w1,w2;p1,p2"
has m1 hosts under each of m2 leaf switches and w2 spines, each leaf linked
once to every spine.  We pick m1 = the smallest power of two >= sqrt(N) that
holds whole servers and leaves at most 128 leaves, m2 = N/m1 and w2 = m1, so
a leaf has as many up-links as hosts: a non-blocking (1:1) tree, the usual
build for a training fabric.  1K -> "2;32,32;1,32;1,1", 16K ->
"2;128,128;1,128;1,1", 64K -> "2;512,128;1,512;1,1".  The cap exists because
SimGrid 3.32 builds a fat tree in a time that grows with the number of leaves
(65,536 hosts, measured: 512 leaves 8.6 s, 256 leaves 5.2 s, 128 leaves 2.9 s,
64 leaves 1.9 s; 16,384 hosts in 128 leaves 0.5 s).  Real switches have far
fewer ports (a 64K cluster is a 3-level Clos in practice); a 2-level tree with
the same per-link bandwidth has the same bisection, and a route of 2 links
inside a leaf and 4 links across the spine.
"""

import argparse
import math
import os
import re
import stat
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in platforms/
# Device presets, every figure with its public source: platforms/presets.py
# (this script's folder is on sys.path).
from presets import PRESETS  # noqa: E402
# The other fabrics (3-tier Clos, rail-optimised, torus, dragonfly) and the
# simulated scale-up fabric: platforms/fabrics.py.
import fabrics  # noqa: E402

# "Free communication": every transfer takes ~bytes/1e30 s.  1e30 B/s is far
# inside double range (SimGrid handles up to 1e300 on this machine) and leaves
# room for products such as bandwidth x time without overflow.
FREE_BANDWIDTH_BPS = 1e30

CONFIG = """  <config>
    <!-- CM02: no TCP latency/bandwidth correction factors; crosstraffic 0: no
         ACK traffic on the reverse path; TCP-gamma 1e15: no TCP window cap
         (RDMA fabrics).  All three names are accepted by SimGrid 3.32. -->
    <prop id="network/model" value="CM02"/>
    <prop id="network/crosstraffic" value="0"/>
    <prop id="network/TCP-gamma" value="1e15"/>
  </config>
"""


MAX_LEAVES = 128
# The reader's bounds (docs/platform-format.md): a rank has at most 9 digits,
# npus_per_node is 1 .. 1e6, a link's bandwidth 1e3 .. 1e30 B/s and its latency
# 0 .. 1 s (as scaleup_bandwidth_Bps <= 1e30 and scaleup_latency_s <= 1).
MAX_NPUS = 10 ** 9
MAX_PER_NODE = 10 ** 6
LINK_BPS = (1e3, 1e30)
LINK_LATENCY_S = (0.0, 1.0)
# simrun's bound on a platform's size (PLATFORM_MAX_ELEMENTS,
# docs/platform-format.md): hosts, switches and links of its clusters, as
# sim/net/platform_file.c counts them; simrun refuses a larger file unless
# --allow-large, and so does this script (ALLOW_LARGE: its --allow-large).
MAX_ELEMENTS = 2e6
ALLOW_LARGE = False
# simrun reads a FAT_TREE of at most this many levels (MAX_FAT_TREE_LEVELS),
# and no count of a topology above MAX_NPUS.
MAX_FAT_TREE_LEVELS = 8
# The header line that marks a file this script wrote: -o replaces only such
# a file (or an empty one), never another.
GENERATED_MARK = "Generated by platforms/gen_platform.py"
# --free-comm's servers (free_comm_platform)
FREE_COMM_PER_NODE = 8


def check_sizes(num_npus, per_node):
    """num_npus NPUs in servers of per_node: both whole numbers in the
    reader's range, num_npus a multiple of per_node."""
    if not isinstance(per_node, int) or not 1 <= per_node <= MAX_PER_NODE:
        raise ValueError("--npus-per-node %s: expected a whole number of NPUs per server "
                         "from 1 to %d" % (per_node, MAX_PER_NODE))
    if (not isinstance(num_npus, int) or not 1 <= num_npus <= MAX_NPUS
            or num_npus % per_node):
        raise ValueError("--npus %s: expected a positive multiple of %d NPUs per node, at "
                         "most %d" % (num_npus, per_node, MAX_NPUS))


def whole_numbers(text, sep=","):
    """"4,4,4" -> [4, 4, 4]: digits only (no sign, space or underscore, which
    int() would take but the text goes into the XML as it is); ValueError."""
    items = text.split(sep)
    if not all(x and x.isascii() and x.isdigit() for x in items):
        raise ValueError(text)
    return [int(x) for x in items]


def parse_pgft(topo):
    """SimGrid's PGFT "L;m1,..,mL;w1,..,wL;p1,..,pL" -> (m, w, p) lists of
    positive whole numbers, L of each; ValueError naming --topo otherwise.
    L is at most MAX_FAT_TREE_LEVELS and every number at most MAX_NPUS, as
    simrun reads them."""
    try:
        parts = topo.split(";")
        levels = whole_numbers(parts[0], ";")[0]
        lists = [whole_numbers(part) for part in parts[1:]]
        ok = (1 <= levels <= MAX_FAT_TREE_LEVELS and len(lists) == 3
              and all(len(l) == levels for l in lists)
              and all(1 <= x <= MAX_NPUS for l in lists for x in l))
    except (ValueError, IndexError, AttributeError):
        ok = False
    if not ok:
        raise ValueError('--topo "%s": expected "L;m1,..,mL;w1,..,wL;p1,..,pL", L from 1 to %d '
                         "and L whole numbers from 1 to %d in each list"
                         % (topo, MAX_FAT_TREE_LEVELS, MAX_NPUS))
    return lists


def fat_tree_elements(m, w, p):
    """Hosts, switches and links of SimGrid's PGFT (m, w, p), as simrun counts
    them (sim/net/platform_file.c): prod(m) hosts; at level k, the nodes of
    level k-1 with w_k * p_k links up each, and prod_{i>k} m_i * prod_{i<=k}
    w_i switches."""
    nodes = math.prod(m)
    total = nodes
    for mk, wk, pk in zip(m, w, p):
        total += nodes * wk * pk
        nodes = nodes // mk * wk
        total += nodes
    return total


def check_elements(count, what):
    """ValueError naming what (the options that size the platform) when the
    platform has more than simrun's MAX_ELEMENTS and --allow-large is not
    given: simrun would refuse the file."""
    if count > MAX_ELEMENTS and not ALLOW_LARGE:
        raise ValueError("%s: a platform of about %.3g hosts, switches and links, over simrun's "
                         "bound of %s, which it refuses to load (--allow-large writes it anyway, "
                         "for simrun --allow-large)" % (what, count, fmt(MAX_ELEMENTS)))


def check_link(flag, what, bandwidth):
    """ValueError naming flag when a link bandwidth it makes is outside
    simrun's range LINK_BPS (simrun refuses the file)."""
    if not LINK_BPS[0] <= bandwidth <= LINK_BPS[1]:
        raise ValueError("%s: makes %s %s B/s, outside simrun's link range %s to %s B/s"
                         % (flag, what, fmt(bandwidth), fmt(LINK_BPS[0]), fmt(LINK_BPS[1])))


def title(p, per_node):
    """The header's title: the preset's, or with another server size the
    device name and that size (the preset's title names its own server)."""
    if per_node == p["npus_per_node"]:
        return p["title"]
    return "%s, %d per server (--npus-per-node %d; the preset's server holds %d)" % (
        p.get("device", p["title"]), per_node, per_node, p["npus_per_node"])


def note_lines(p, per_node):
    """The preset's note for the header, marked as the preset's when the
    server size differs (a note may describe the preset's server)."""
    if "note" not in p:
        return []
    if per_node == p["npus_per_node"]:
        return [p["note"]]
    return ["The preset's note, for its server of %d: %s" % (p["npus_per_node"], p["note"])]


def fat_tree_shape(num_npus, npus_per_node=1):
    """(m1, m2): m1 hosts per leaf -- the smallest power of two >= sqrt(N) that
    holds whole servers and leaves at most MAX_LEAVES leaves -- and m2 = N / m1."""
    whole = npus_per_node if npus_per_node & (npus_per_node - 1) == 0 else 1
    m1 = 1
    while m1 * m1 < num_npus or m1 % whole or num_npus > m1 * MAX_LEAVES:
        m1 *= 2
    while m1 > 1 and num_npus % m1:
        m1 //= 2
    if m1 == num_npus:  # a single leaf is not a 2-level tree; split it
        m1 = max(1, num_npus // 2)
    return m1, num_npus // m1


def fat_tree_topo(num_npus, npus_per_node=1):
    m1, m2 = fat_tree_shape(num_npus, npus_per_node)
    return "2;%d,%d;1,%d;1,1" % (m1, m2, m1)


def fmt(x):
    """Engineering notation that reads back as the same double: 64e9, 2e-06 -> 2e-6."""
    x = float(x)
    if x == 0:
        return "0"
    exp3 = int(math.floor(math.log10(abs(x)) / 3) * 3)
    if 1e-3 <= abs(x) < 1e3:
        exp3 = 0
    for decimals in range(0, 18):
        mantissa = "%.*f" % (decimals, x / 10.0 ** exp3)
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        text = mantissa if exp3 == 0 else "%se%d" % (mantissa, exp3)
        if float(text) == x:
            return text
    return repr(x)


def props_xml(props):
    """props: list of (name, value, source) -> <prop> lines with comments;
    value None writes the comment only (an optional property not given)."""
    lines = []
    for name, value, source in props:
        if value is None:
            lines.append("    <!-- %s: %s -->" % (name, source))
            continue
        lines.append("    <!-- %s -->" % source)
        lines.append('    <prop id="%s" value="%s"/>' % (name, value))
    return "\n".join(lines) + "\n"


def header(title, lines):
    body = "\n".join("  " + l for l in lines)
    return (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        "<!--\n  %s\n%s\n  Generated by platforms/gen_platform.py; do not edit by hand.\n-->\n"
        '<platform version="4.1">\n' % (title, body)
    )


def cluster_xml(num_npus, speed, bw, lat_s, extra_attrs, props):
    return (
        '  <cluster id="npus" prefix="npu-" radical="0-%d" suffix="" speed="%sf"\n'
        '           bw="%sBps" lat="%ss" sharing_policy="SPLITDUPLEX"%s>\n%s  </cluster>\n'
        % (num_npus - 1, fmt(speed), fmt(bw), fmt(lat_s), extra_attrs, props_xml(props))
    )


REQUIRED = ["hbm_bytes", "hbm_bandwidth_Bps", "npus_per_node", "scaleup_bandwidth_Bps",
            "scaleup_latency_s", "matmul_efficiency", "kernel_launch_s"]


def node_source(p, per_node):
    """The npus_per_node comment: the preset's source, or with another server
    size that size first and the preset's server after it."""
    if per_node == p["npus_per_node"]:
        return p["node_src"]
    return "%d NPUs per server (--npus-per-node %d); the preset's server: %s" % (
        per_node, per_node, p["node_src"])


def device_props(p, npus_per_node):
    """The required properties in REQUIRED's order, then the optional ones."""
    return [
        ("hbm_bytes", fmt(p["hbm_bytes"]), "HBM capacity: " + p["hbm_src"]),
        ("hbm_bandwidth_Bps", fmt(p["hbm_bandwidth_Bps"]), "HBM bandwidth: " + p["hbm_bw_src"]),
        ("npus_per_node", str(npus_per_node), node_source(p, npus_per_node)),
        ("scaleup_bandwidth_Bps", fmt(p["scaleup_bandwidth_Bps"]), p["scaleup_src"]),
        ("scaleup_latency_s", fmt(p["scaleup_latency_s"]), p["scaleup_lat_src"]),
        ("matmul_efficiency", fmt(p["matmul_efficiency"]), p["eff_src"]),
        ("kernel_launch_s", fmt(p["kernel_launch_s"]), p["launch_src"]),
    ] + optional_props(p)


# Optional properties (planner/model/cluster.h): a preset gives one only with
# a cited figure; otherwise its note is written as a comment and the
# property's default applies (docs/platform-format.md).
OPTIONAL = [
    # (property, preset value key, source key, note key, format)
    ("gemm_efficiency_table", "gemm_efficiency_table", "gemm_table_src", "gemm_table_note", str),
    ("attention_efficiency", "attention_efficiency", "attention_src", "attention_note", fmt),
    ("elementwise_fusion", "elementwise_fusion", "fusion_src", "fusion_note", str),
    ("collective_bus_efficiency", "collective_bus_efficiency", "bus_src", "bus_note", fmt),
    ("hbm_efficiency", "hbm_efficiency", "hbm_eff_src", "hbm_eff_note", fmt),
    ("fp8_flops", "fp8_flops", "fp8_src", "fp8_note", fmt),
]


def optional_props(p):
    out = []
    for name, key, src, note, form in OPTIONAL:
        if key in p:
            out.append((name, form(p[key]), p[src]))
        elif note in p:
            out.append((name, None, p[note]))
    return out


def fat_tree_platform(preset, num_npus, npus_per_node=None, topo=None, scaleup=False):
    p = PRESETS[preset]
    per_node = p["npus_per_node"] if npus_per_node is None else npus_per_node
    check_sizes(num_npus, per_node)
    given = topo is not None
    topo = fat_tree_topo(num_npus, per_node) if topo is None else topo
    m, w, pl = parse_pgft(topo)
    if math.prod(m) != num_npus:
        raise ValueError('--topo "%s": its m list holds %d hosts, not --npus %d'
                         % (topo, math.prod(m), num_npus))
    check_elements(fat_tree_elements(m, w, pl) + (3 * num_npus if scaleup else 0),
                   '--topo "%s"' % topo if given else "--npus %d" % num_npus)
    if len(m) == 2:
        shape = ("a 2-level FAT_TREE"
                 ' "%s" (%d hosts per leaf switch, %d leaves, %d spines, every link %s B/s).'
                 % (topo, m[0], m[1], w[1], fmt(p["nic_Bps"])))
    else:
        shape = ('a %d-level FAT_TREE "%s" (%d hosts per leaf switch, every link %s B/s).'
                 % (len(m), topo, m[0], fmt(p["nic_Bps"])))
    if m[0] % per_node == 0:
        servers = ["Ranks of one server are consecutive (server = rank / npus_per_node) and "
                   "share a leaf;",
                   "a real rail-optimised fabric would spread them over leaves instead."]
    else:
        servers = ["Ranks of one server are consecutive (server = rank / npus_per_node); %d "
                   "hosts per leaf" % m[0],
                   "are not whole servers of %d, so some servers span two leaves." % per_node]
    lines = [
        "%d NPUs = %d servers x %d." % (num_npus, num_npus // per_node, per_node),
        "Host speed: %s." % p["speed_src"],
        "Scale-out: %s; one NIC link per NPU into %s" % (p["nic_src"], shape),
        "Link latency: %s." % p["link_lat_src"],
    ] + note_lines(p, per_node) + servers
    if scaleup:
        return fabrics.fat_tree_with_scaleup(p, num_npus, per_node, topo, lines)
    return (
        header("npusim platform: %s" % title(p, per_node), lines)
        + CONFIG
        + cluster_xml(num_npus, p["speed_flops"], p["nic_Bps"], p["link_latency_s"],
                      '\n           topology="FAT_TREE" topo_parameters="%s"' % topo,
                      device_props(p, per_node))
        + "</platform>\n"
    )


def flat_platform(num_npus, bandwidth_Bps, latency_s, per_node=1, scaleup_Bps=None,
                  scaleup_latency_s=None):
    """Collective-test platform: every route is one host link up and one down.
    per_node > 1 groups consecutive NPUs into servers whose scale-up fabric
    has scaleup_Bps and scaleup_latency_s (hierarchical collectives)."""
    check_sizes(num_npus, per_node)
    check_elements(3 * num_npus, "--flat %d" % num_npus)  # a host, its link up and down
    p = PRESETS["910b"]
    props = device_props(p, 1)[:len(REQUIRED)]  # test platform: no optional properties
    props[2] = ("npus_per_node", "1", "one NPU per node: every transfer crosses the flat fabric")
    props[3] = ("scaleup_bandwidth_Bps", fmt(bandwidth_Bps), "unused (1 NPU per node); = route bandwidth")
    props[4] = ("scaleup_latency_s", fmt(latency_s), "unused (1 NPU per node); = route latency")
    if per_node > 1:
        props[2] = ("npus_per_node", str(per_node), "test servers; traffic between servers crosses the flat fabric")
        props[3] = ("scaleup_bandwidth_Bps", fmt(scaleup_Bps), "test figure, distinct from the route bandwidth")
        props[4] = ("scaleup_latency_s", fmt(scaleup_latency_s), "test figure, distinct from the route latency")
    lines = [
        "Collective-test platform: %d NPUs, %d NPU%s per node, flat cluster (no backbone)."
        % (num_npus, per_node, "s" if per_node > 1 else ""),
        "Every host has one private full-duplex link of %s B/s and %s s, so every" % (fmt(bandwidth_Bps), fmt(latency_s / 2)),
        "host-to-host route has bandwidth B = %s B/s and latency alpha = %s s" % (fmt(bandwidth_Bps), fmt(latency_s)),
        "(ring all-reduce of S bytes: 2(N-1)(S/(N B) + alpha) on an idle fabric).",
        "Device figures: the 910b preset of gen_platform.py.",
    ]
    return (
        header("npusim test platform: flat %d" % num_npus, lines)
        + CONFIG
        + cluster_xml(num_npus, p["speed_flops"], bandwidth_Bps, latency_s / 2, "", props)
        + "</platform>\n"
    )


def free_comm_platform(num_npus):
    p = PRESETS["910b"]
    per_node = FREE_COMM_PER_NODE
    if not isinstance(num_npus, int) or not 1 <= num_npus <= MAX_NPUS or num_npus % per_node:
        raise ValueError("--free-comm %s: expected a positive multiple of %d NPUs (%d per "
                         "node), at most %d" % (num_npus, per_node, per_node, MAX_NPUS))
    check_elements(fat_tree_elements(*parse_pgft(fat_tree_topo(num_npus, per_node))),
                   "--free-comm %d" % num_npus)
    props = device_props(p, per_node)[:len(REQUIRED)]  # test platform: no optional properties
    free = "free communication"
    props[3] = ("scaleup_bandwidth_Bps", fmt(FREE_BANDWIDTH_BPS), free)
    props[4] = ("scaleup_latency_s", "0", free)
    props[5] = ("matmul_efficiency", "1", "free communication platform: compute at peak")
    props[6] = ("kernel_launch_s", "0", "free communication platform: no launch overhead")
    lines = [
        "Free-communication test platform: %d NPUs, %d per node." % (num_npus, per_node),
        "Every link %s B/s with latency 0, scale-up the same, matmul_efficiency 1," % fmt(FREE_BANDWIDTH_BPS),
        "kernel_launch_s 0: a simulation of uniform stages must reproduce the closed-form",
        "bubble ratios ((p-1)/m for GPipe and 1F1B ...) to rounding.",
        "Host speed and HBM: the 910b preset (%s)." % p["speed_src"],
    ]
    return (
        header("npusim test platform: free communication, %d NPUs" % num_npus, lines)
        + CONFIG
        + cluster_xml(num_npus, p["speed_flops"], FREE_BANDWIDTH_BPS, 0,
                      '\n           topology="FAT_TREE" topo_parameters="%s"' % fat_tree_topo(num_npus, per_node),
                      props)
        + "</platform>\n"
    )


# Every shipped platform: file name -> function producing its text.
SHIPPED = {
    # The main platform: a 2-tier leaf-spine Clos as zones (fabrics.py), the
    # same times as the 2-level FAT_TREE and about 20% faster to simulate.
    "16k_npu.xml": lambda: fabrics.clos3_platform("910b", 16384, leaf_hosts=128, leaves_per_pod=128),
    # CodeGeeX's cluster (workloads/codegeex_13b.json): 192 servers of 8 Ascend 910.
    "codegeex_1536_910.xml": lambda: fat_tree_platform("910", 1536),
    "dgx_a100_1024.xml": lambda: fat_tree_platform("a100", 1024),
    "dgx_a100_128.xml": lambda: fat_tree_platform("a100", 128),
    "h100_16k.xml": lambda: fat_tree_platform("h100", 16384),
    # 2 servers x 4 NPUs, 4 hosts per leaf: rank 4 is behind another leaf.
    "test_8npu.xml": lambda: fat_tree_platform("910b", 8, npus_per_node=4, topo="2;4,2;1,4;1,1"),
    "test_16npu.xml": lambda: fat_tree_platform("910b", 16),
    "test_64npu.xml": lambda: fat_tree_platform("910b", 64),
    # 4 servers of 8 for the MoE tests (workloads/moe_21b_32npu.json, EP 32 = DP 32;
    # tests/moe_testutil.c).
    "moe_32npu.xml": lambda: fat_tree_platform("910b", 32),
    "test_free_comm_8.xml": lambda: free_comm_platform(8),
    "test_free_comm_16.xml": lambda: free_comm_platform(16),
    "test_free_comm_32.xml": lambda: free_comm_platform(32),
    # B = 1e9 B/s, alpha = 10 us: round numbers for closed-form checks.
    "test_flat_4.xml": lambda: flat_platform(4, 1e9, 10e-6),
    "test_flat_8.xml": lambda: flat_platform(8, 1e9, 10e-6),
    "test_flat_16.xml": lambda: flat_platform(16, 1e9, 10e-6),
    # 4 servers x 4 NPUs, scale-up 4e9 B/s and 2 us: hierarchical collectives.
    "test_flat_16_4pn.xml": lambda: flat_platform(16, 1e9, 10e-6, 4, 4e9, 2e-6),
    # Fabric tests (tests/test_fabrics.c, test_scaleup.c; platforms/fabrics.py):
    # 3-tier Clos, 8 hosts per leaf, 2 leaves per pod, 4 pods, pod tier 4:1.
    "test_clos3_64.xml": lambda: fabrics.clos3_platform("910b", 64, None, 8, 2, (1.0, 4.0)),
    # Rail-optimised, 8 servers x 8 NPUs, 4 servers per SU: 16 rail leaves.
    "test_rail_64.xml": lambda: fabrics.rail_platform("910b", 64, None, 4),
    # The same with PXN and the simulated scale-up fabric.
    "test_rail_pxn_64.xml": lambda: fabrics.rail_platform("910b", 64, None, 4, 1.0, True, True),
    # The same rail fabric in dual-plane form: two ports of 12.5e9 B/s per NIC.
    "test_rail_2plane_64.xml": lambda: fabrics.rail_platform("910b", 64, None, 4, planes=2),
    "test_torus_64.xml": lambda: fabrics.torus_platform("910b", 64, "4,4,4"),
    "test_dragonfly_64.xml": lambda: fabrics.dragonfly_platform("910b", 64, "4,1;2,1;4,1;2"),
    # The 2-level fat tree of test_16npu.xml with the simulated scale-up fabric.
    "test_scaleup_16.xml": lambda: fat_tree_platform("910b", 16, scaleup=True),
    # Two NVL72 domains (GB200) on a 3-tier Clos of 36-host leaves.
    "test_nvl72_144.xml": lambda: fabrics.clos3_platform("gb200", 144, None, 36, 2, (1.0, 1.0),
                                                         True),
}


class WriteError(Exception):
    """The output cannot be written (exit status 1); the message names it."""


def _errno_text(e):
    return e.strerror or str(e)


def check_output(path, opt="-o"):
    """Refuses, before any platform is built, an output that cannot be a file:
    a directory, or a file in a folder that does not exist."""
    if path in (None, "-"):
        return
    if path == "":
        raise ValueError('%s "": empty file name, expected a file name or "-" (standard output)'
                         % opt)
    if os.path.isdir(path):
        raise WriteError("%s %s: is a directory, expected a file name" % (opt, path))
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder):
        raise WriteError("%s %s: folder %s does not exist" % (opt, path, folder))
    if os.path.isfile(path) and not os.access(path, os.W_OK):
        raise WriteError("%s %s: cannot write: Permission denied" % (opt, path))


def generated(path):
    """path is a platform this script wrote (GENERATED_MARK in the header
    comment, before <platform>), or an empty file: -o may replace it."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16).decode("utf-8", errors="replace")
    except OSError:
        return False
    if head == "":
        return True
    mark, body = head.find(GENERATED_MARK), head.find("<platform")
    return head.startswith("<?xml") and mark >= 0 and (body < 0 or mark < body)


def check_overwrite(path, opt="-o"):
    """WriteError when path is an existing regular file that generated()
    says this script did not write: it is never overwritten (a workload JSON
    given as -o became XML).  Standard output, a new file, and a device or a
    FIFO (written in place) pass."""
    if path in (None, "-"):
        return
    try:
        st = os.stat(path)
    except OSError:
        return  # a new file; write() says what else is wrong
    if stat.S_ISREG(st.st_mode) and not generated(path):
        raise WriteError("%s %s: exists and is not a platform gen_platform.py wrote (no \"%s\" "
                         "in its header); refusing to overwrite it: remove it or name another "
                         "file" % (opt, path, GENERATED_MARK))


def write(text, path, opt="-o"):
    """Writes text to path ("-" or None: standard output), whole or not at
    all: into a temporary file in the target's folder, renamed over the
    target once complete, so a failed write leaves no partial file and an
    existing target as it was.  A target that exists and is no regular file
    (/dev/null, a FIFO) is written in place.  WriteError names opt and path."""
    if path in (None, "-"):
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError as e:
            try:  # drop what is left buffered, or the exit would fail on it again
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except OSError:
                pass
            raise WriteError("%s: cannot write standard output: %s" % (opt, _errno_text(e)))
        return
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise WriteError("%s %s: %s" % (opt, path, _errno_text(e)))
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise WriteError("%s %s: is a directory, expected a file name" % (opt, path))
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise WriteError("%s %s: cannot write: %s" % (opt, path, _errno_text(e)))
        return
    target = os.path.realpath(path)  # through a symbolic link: replace its target
    if st is not None:
        mode = stat.S_IMODE(st.st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".",
                                   suffix=".tmp", dir=os.path.dirname(target))
    except OSError as e:
        raise WriteError("%s %s: cannot write: %s" % (opt, path, _errno_text(e)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise WriteError("%s %s: cannot write: %s" % (opt, path, _errno_text(e)))
        raise


def preset_summary():
    """One line per preset for --help: the figures the XML will carry."""
    lines = []
    for name in sorted(PRESETS):
        p = PRESETS[name]
        lines.append(
            "  %-5s %s\n"
            "        speed %s FLOP/s, HBM %s B at %s B/s, %d NPUs per node,\n"
            "        scale-up %s B/s and %s s, NIC %s B/s, link latency %s s,\n"
            "        matmul efficiency %s, kernel launch %s s"
            % (name, p["title"], fmt(p["speed_flops"]), fmt(p["hbm_bytes"]),
               fmt(p["hbm_bandwidth_Bps"]), p["npus_per_node"],
               fmt(p["scaleup_bandwidth_Bps"]), fmt(p["scaleup_latency_s"]),
               fmt(p["nic_Bps"]), fmt(p["link_latency_s"]),
               fmt(p["matmul_efficiency"]), fmt(p["kernel_launch_s"])))
        given = ["%s %s" % (name, form(p[key])) for name, key, _, _, form in OPTIONAL if key in p]
        lines.append("        optional: %s" % (", ".join(given) if given else "none (defaults)"))
    return "\n".join(lines)


DESCRIPTION = """\
Writes a SimGrid platform (XML, DTD 4.1) for npusim: one host per NPU named
npu-<rank>, host speed = peak dense bf16 FLOP/s, and the <prop>s that
planner/model/cluster.h requires (hbm_bytes, hbm_bandwidth_Bps, npus_per_node,
scaleup_bandwidth_Bps, scaleup_latency_s, matmul_efficiency, kernel_launch_s),
each with its source as an XML comment, and the optional ones a preset can
cite a figure for (gemm_efficiency_table, attention_efficiency,
elementwise_fusion, collective_bus_efficiency, hbm_efficiency; a comment says why where not).  Exactly one mode is required:
--preset (a device on a 2-level fat tree), --flat (collective-test cluster),
--free-comm (closed-form test platform) or --all (every shipped platform).
docs/platform-format.md describes the format."""

EPILOG = """\
presets (edit PRESETS in platforms/presets.py to add a device):
%s

examples:
  # 64K Ascend 910B-class NPUs (8 per server) on a non-blocking 2-level fat tree
  gen_platform.py --preset 910b --npus 65536 -o /tmp/64k_npu.xml
  # 2,048 H100 on an explicit fat tree with a 4:1 taper (16 up-links per leaf of 64)
  gen_platform.py --preset h100 --npus 2048 --topo "2;64,32;1,16;1,1" -o /tmp/h100_2k.xml
  # 16 NPUs on a flat cluster, route bandwidth 1e9 B/s and latency 10 us
  gen_platform.py --flat 16 --bandwidth-Bps 1e9 --latency-s 10e-6 -o /tmp/flat16.xml
  # 32 NPUs with free communication (closed-form bubble tests)
  gen_platform.py --free-comm 32 -o /tmp/free32.xml
  # rewrite every shipped platform in platforms/ (they must equal this output)
  gen_platform.py --all

Automatic fat tree for N hosts: "2;m1,m2;1,m1;1,1", m1 hosts under each of
m2 = N/m1 leaves and m1 spines, m1 the smallest power of two >= sqrt(N) that
holds whole servers with at most %d leaves (1K -> "2;32,32;1,32;1,1",
16K -> "2;128,128;1,128;1,1", 64K -> "2;512,128;1,512;1,1").
Every option applies to some modes and fabrics only (its help says which);
one given elsewhere is refused, not ignored.  A platform simrun would refuse
is not written: a link bandwidth outside 1e3 .. 1e30 B/s (say, from
--oversub), or more than its 2e6 hosts, switches and links (--allow-large
writes it, for simrun --allow-large).  The output is written whole or not at
all (a temporary file in its folder, renamed into place); an existing file is
replaced only when it is a platform this script wrote (or empty), never
another file (-o workload.json).
Exit status: 0; 1 when the output cannot be written or is another file; 2 on
a bad command line (an option's value out of range, sizes that do not fit
together, an option that does not apply), with one line on standard error
naming the option."""


LINK_FIGURES = re.compile(r'\b(bw|bandwidth|lat|latency)="([^"]*?)(Bps|s)"')


def check_links(text, a):
    """Every link bandwidth and latency of text within simrun's ranges
    (LINK_BPS, LINK_LATENCY_S), else ValueError naming the options given:
    what simrun would refuse is not written.  The options' own checks (say,
    --oversub's) name the option first; this is the net under them."""
    for attr, value, unit in LINK_FIGURES.findall(text):
        bandwidth = attr in ("bw", "bandwidth")
        low, high = LINK_BPS if bandwidth else LINK_LATENCY_S
        try:
            x = float(value)
        except ValueError:
            x = math.nan
        if not low <= x <= high:
            given = [fabrics.given(flag, getattr(a, dest)) for dest, flag, _ in MODE_OPTIONS
                     if getattr(a, dest) not in (None, False)]
            raise ValueError("%s: makes a link %s of %s %s, outside simrun's range %s to %s %s"
                             % (" ".join(given) or "the options given",
                                "bandwidth" if bandwidth else "latency", value,
                                "B/s" if bandwidth else "s", fmt(low), fmt(high),
                                "B/s" if bandwidth else "s"))


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        """argparse's own errors as one line, like the script's (--help has the usage)."""
        self.exit(2, "%s: %s\n" % (self.prog, message))


def _count(flag, value, low, what):
    """A whole-number option: value in low .. MAX_NPUS, else ValueError."""
    if not low <= value <= MAX_NPUS:
        raise ValueError("%s %d: expected %s from %d to %d" % (flag, value, what, low, MAX_NPUS))
    return value


def _number(flag, text, default, bounds, unit):
    """A number option given as text (None: default), finite, within bounds."""
    if text is None:
        return default
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and bounds[0] <= x <= bounds[1]):
        raise ValueError("%s %s: expected %s from %s to %s" % (flag, text, unit, fmt(bounds[0]),
                                                                fmt(bounds[1])))
    return x


# Options of one mode only: (dest, option, the mode).  The fabric options are
# --preset's too (fabrics.FABRIC_OPTIONS says which fabric each is for).
MODE_OPTIONS = [
    ("npus", "--npus", "--preset"),
    ("npus_per_node", "--npus-per-node", "--preset"),
    ("fabric", "--fabric", "--preset"),
    ("scaleup_sim", "--scaleup-sim", "--preset"),
] + [(dest, flag, "--preset") for dest, flag, _ in fabrics.FABRIC_OPTIONS] + [
    ("bandwidth_Bps", "--bandwidth-Bps", "--flat"),
    ("latency_s", "--latency-s", "--flat"),
]


def jobs(a):
    """[(path, option naming it, function making its text)] for the parsed
    options a.  ValueError on a bad command line, WriteError on an output
    that cannot be a file; nothing is built or written yet."""
    mode = ("--all" if a.all is not None else "--preset" if a.preset is not None
            else "--flat" if a.flat is not None else "--free-comm")
    for dest, flag, where in MODE_OPTIONS:
        value = getattr(a, dest)
        if value is not None and value is not False and mode != where:
            raise ValueError("%s: applies to %s only, not %s"
                             % (fabrics.given(flag, value), where, mode))
    if a.allow_large and mode == "--all":
        raise ValueError("--allow-large: applies to --preset, --flat and --free-comm, not --all "
                         "(the shipped platforms are small)")
    if mode == "--all":
        if a.output is not None:
            raise ValueError("-o %s: does not apply to --all, which writes every shipped "
                             "platform into its DIR" % a.output)
        if not os.path.isdir(a.all):
            raise WriteError("--all %s: not a directory, expected the folder to write into"
                             % (a.all or '""'))
        return [(os.path.join(a.all, name), "--all", make) for name, make in SHIPPED.items()]
    check_output(a.output)
    if mode == "--preset":
        if a.npus is None:
            raise ValueError("--preset needs --npus N, the number of NPUs")
        _count("--npus", a.npus, 1, "a number of NPUs")
        if a.npus_per_node is not None and not 1 <= a.npus_per_node <= MAX_PER_NODE:
            raise ValueError("--npus-per-node %d: expected a number of NPUs per server from 1 "
                             "to %d" % (a.npus_per_node, MAX_PER_NODE))
        return [(a.output, "-o", lambda: fabrics.build(a, fat_tree_platform))]
    if mode == "--flat":
        _count("--flat", a.flat, 1, "a number of NPUs")
        bw = _number("--bandwidth-Bps", a.bandwidth_Bps, 1e9, LINK_BPS, "bytes/s")
        lat = _number("--latency-s", a.latency_s, 10e-6, LINK_LATENCY_S, "seconds")
        return [(a.output, "-o", lambda: flat_platform(a.flat, bw, lat))]
    _count("--free-comm", a.free_comm, FREE_COMM_PER_NODE, "a number of NPUs")
    return [(a.output, "-o", lambda: free_comm_platform(a.free_comm))]


def main(argv):
    ap = _Parser(
        prog="gen_platform.py",
        description=DESCRIPTION,
        epilog=EPILOG % (preset_summary(), MAX_LEAVES),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--preset", choices=sorted(PRESETS),
        help="device platform: NPUs of this preset (figures below) on a 2-level "
        "FAT_TREE with one NIC link per NPU; needs --npus")
    mode.add_argument(
        "--flat", type=int, metavar="N",
        help="collective-test platform: N NPUs, 1 per node, flat cluster (one "
        "private link per host, no backbone); 910b compute and HBM figures; "
        "see --bandwidth-Bps and --latency-s")
    mode.add_argument(
        "--free-comm", type=int, metavar="N",
        help="free-communication test platform: N NPUs (a multiple of %d), %d per node, on "
        "a fat tree whose links and scale-up fabric have bandwidth %s B/s and latency 0, "
        "matmul efficiency 1, kernel launch 0 s (closed-form bubble tests)"
        % (FREE_COMM_PER_NODE, FREE_COMM_PER_NODE, fmt(FREE_BANDWIDTH_BPS)))
    mode.add_argument(
        "--all", nargs="?", const=os.path.dirname(os.path.abspath(__file__)),
        metavar="DIR",
        help="write every shipped platform (%d files) into DIR, an existing folder "
        "(default: this script's folder, platforms/), overwriting them (a file of one of "
        "their names that this script did not write is refused, and nothing written)"
        % len(SHIPPED))
    ap.add_argument(
        "--npus", type=int, metavar="N",
        help="with --preset: number of NPUs (hosts), a positive multiple of the "
        "NPUs per node; required")
    ap.add_argument(
        "--npus-per-node", type=int, metavar="K",
        help="with --preset: NPUs per server, the scale-up domain, 1 to %d (default: the "
        "preset's: %s)" % (MAX_PER_NODE, ", ".join("%s %d" % (n, PRESETS[n]["npus_per_node"])
                                                    for n in sorted(PRESETS))))
    ap.add_argument(
        "--topo", metavar="PGFT",
        help='with --preset and the fat-tree fabric: SimGrid fat-tree parameters '
        '"L;m1,..,mL;w1,..,wL;p1,..,pL" (L up to 8, whole numbers from 1 to 1e9) '
        "instead of the automatic non-blocking 2-level shape; the product of the "
        "m list must equal --npus (default: automatic, see below)")
    ap.add_argument(
        "--bandwidth-Bps", metavar="B",
        help="with --flat: bandwidth of every host-to-host route, bytes/s, %s to %s "
        "(default: 1e9)" % (fmt(LINK_BPS[0]), fmt(LINK_BPS[1])))
    ap.add_argument(
        "--latency-s", metavar="A",
        help="with --flat: latency of every host-to-host route, seconds, 0 to 1; each of "
        "the two private links on it carries A/2 (default: 10e-6)")
    ap.add_argument(
        "-o", "--output", metavar="FILE",
        help='with --preset, --flat, --free-comm: output file ("-" or absent: '
        "standard output), written whole or not at all")
    ap.add_argument(
        "--allow-large", action="store_true",
        help="with --preset, --flat, --free-comm: write a platform over simrun's bound of %s "
        "hosts, switches and links (simrun loads it only with its own --allow-large; by default "
        "it is refused here as there)" % fmt(MAX_ELEMENTS))
    fabrics.add_arguments(ap)
    a = ap.parse_args(argv)
    global ALLOW_LARGE
    ALLOW_LARGE = a.allow_large
    try:
        todo = jobs(a)
        texts = [(path, opt, make()) for path, opt, make in todo]
        for path, opt, text in texts:
            check_links(text, a)
        for path, opt, _ in texts:  # every target before the first is written
            check_overwrite(path, opt)
    except ValueError as e:
        sys.stderr.write("gen_platform.py: %s\n" % e)
        return 2
    except WriteError as e:
        sys.stderr.write("gen_platform.py: %s\n" % e)
        return 1
    except MemoryError:
        sys.stderr.write("gen_platform.py: out of memory building the platform\n")
        return 1
    try:
        for path, opt, text in texts:
            write(text, path, opt)
    except WriteError as e:
        sys.stderr.write("gen_platform.py: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
