"""fabrics.py -- the scale-out fabrics of gen_platform.py other than its
2-level FAT_TREE cluster (--fabric NAME), and the simulated scale-up fabric.

Every writer returns the XML text of a whole platform.  The hosts are NPUs
named npu-<rank> as everywhere (docs/platform-format.md); what changes is how
their NIC links are joined:

  clos3     3-tier Clos (leaf, pod spine, core) with an oversubscription per
            tier, built as SimGrid zones: one crossbar <cluster> per leaf
            switch, a Full zone per pod whose routes join its leaves through
            one up-link each (the pod's spine tier), a Full zone joining the
            pods the same way (the core tier).
            SimGrid 3.32's own 3-level FAT_TREE cluster takes 8-15 s to build
            at 16K hosts (docs/design.md); this construction has a few hundred
            zones and links instead of one switch object per port.
  rail      rail-optimised: NIC i of every server on rail i.  A scalable unit
            (SU) of servers has one leaf switch per rail (NVIDIA DGX SuperPOD
            reference architecture: 32 DGX H100 per SU, 8 rail leaves per SU,
            leaves joined by spines), so NICs of one rail and one SU talk
            through their leaf (2 links) and everything else through the spine
            (4 links).  Built as SimGrid's 2-level FAT_TREE cluster whose
            radical lists the hosts in rail order: leaf j holds the NICs of one
            rail and one SU (SimGrid puts the k-th host of the radical under
            leaf k / m1); it loads like the ordinary 2-level tree.  With cross_rail_pxn=1 the transport sends cross-rail
            traffic over the scale-up fabric to the peer's rail first (NCCL's
            PXN, NCCL 2.12 release notes), then along that rail.
            Dual-plane (--planes 2; Alibaba HPN, Qian et al., SIGCOMM 2024):
            each NIC has two ports, each on its own plane, a full copy of
            the rail fabric with no link between the planes.  Plane 0 is the
            NPU hosts' cluster; plane 1 a second FAT_TREE cluster of port
            hosts pl1-<rank> (npusim_port="plane1"), both of port bandwidth
            nic_Bps / 2 (HPN: a 400 Gb/s NIC as 2 x 200 Gb/s).  A flow on one
            port gets one port's bandwidth; nic_plane_policy says how the
            transport uses the ports (split in halves, or whole on a hashed
            plane).
  torus     SimGrid's TORUS cluster ("X,Y,Z"): torus-connected accelerators
            (TPU v4 uses a 3D torus of 4x4x4 cubes, Jouppi et al. ISCA 2023).
  dragonfly SimGrid's DRAGONFLY cluster ("g,gl;c,cl;r,rl;n"): Kim, Dally,
            Scott & Abts, ISCA 2008; the Cray Cascade/Aries layout of groups
            of chassis of routers.

A link here is one SimGrid link with SPLITDUPLEX sharing (the two directions
do not share).  A tier's aggregate up-link capacity is one link: with max-min
sharing, ECMP over k parallel up-links of bandwidth B is the same as one link
of k*B as long as flows are spread evenly (the fluid model has no hash
collisions).

The simulated scale-up fabric (scaleup_fabric="simulated", any fabric): one
more cluster, "scaleup", of port hosts sup-<rank>, each with one private link
of scaleup_bandwidth_Bps and scaleup_latency_s/2 into a crossbar (the server's
NVSwitch or HCCS switch, or an NVL72 domain's switch trays), and the property
npusim_port="scaleup" that tells the reader they are not NPUs.  A transfer
between two NPUs of one server runs as a flow between their port hosts, so
concurrent transfers through one NPU's port share its bandwidth.
"""

import math


def _gp():
    import gen_platform  # lazily: gen_platform imports this module
    return gen_platform


def _radical(ranks):
    """"a-b" for a consecutive range, else a comma list (SimGrid's radical)."""
    if ranks == list(range(ranks[0], ranks[0] + len(ranks))):
        return "%d-%d" % (ranks[0], ranks[-1])
    return ",".join(str(r) for r in ranks)


def _leaf(cid, ranks, speed, bw, lat, props_text):
    """A leaf switch: a crossbar <cluster> (no backbone) with a router that
    its parent zone routes to; host to host 2 links, host to router 1."""
    gp = _gp()
    return ('<cluster id="%s" prefix="npu-" radical="%s" suffix="" speed="%sf" bw="%sBps" '
            'lat="%ss" sharing_policy="SPLITDUPLEX" router_id="%s-gw">\n%s</cluster>\n'
            % (cid, _radical(ranks), gp.fmt(speed), gp.fmt(bw), gp.fmt(lat), cid, props_text))


def _bare_props(props):
    return "".join('<prop id="%s" value="%s"/>\n' % (n, v) for n, v, _ in props if v is not None)


def _indent(text, n):
    pad = " " * n
    return "".join(pad + l + "\n" if l else "\n" for l in text.split("\n")[:-1])


def _zone_route(src, dst, gw_src, gw_dst, links):
    return ('  <zoneRoute src="%s" dst="%s" gw_src="%s" gw_dst="%s" symmetrical="NO">%s'
            '</zoneRoute>\n' % (src, dst, gw_src, gw_dst, "".join(
                '<link_ctn id="%s" direction="%s"/>' % l for l in links)))


def _group(zid, children, uplinks, lat):
    """A Full zone joining child zones, each through one up-link into the
    group's switch tier, and a one-router gateway zone "<zid>-gw" by which the
    parent reaches the group.  children: list of (child zone id, child
    gateway, child XML text); uplinks[i]: capacity of child i's up-link (one
    SPLITDUPLEX link).  Routes: child a to child b is [a up, b down]; child to
    the gateway [up], back [down].  SimGrid's Floyd and Dijkstra zones did not
    compose such routes through a middle zone here (3.32: "No route"), so every
    pair is written: n(n+1) routes for n children."""
    gp = _gp()
    out = ['<zone id="%s" routing="Full">\n' % zid]
    for _, _, text in children:
        out.append(_indent(text, 2))
    out.append('  <zone id="%s-gw" routing="Full"><router id="%s-r"/></zone>\n' % (zid, zid))
    for (cid, _, _), cap in zip(children, uplinks):
        out.append('  <link id="%s-up" bandwidth="%sBps" latency="%ss" sharing_policy="SPLITDUPLEX"/>\n'
                   % (cid, gp.fmt(cap), gp.fmt(lat)))
    for a, ga, _ in children:
        for b, gb, _ in children:
            if a != b:
                out.append(_zone_route(a, b, ga, gb, [(a + "-up", "UP"), (b + "-up", "DOWN")]))
        out.append(_zone_route(a, zid + "-gw", ga, zid + "-r", [(a + "-up", "UP")]))
        out.append(_zone_route(zid + "-gw", a, zid + "-r", ga, [(a + "-up", "DOWN")]))
    out.append("</zone>\n")
    return "".join(out)


def _per_node(p, per_node):
    """The server size: the preset's unless given (0 is refused, not the preset's)."""
    return p["npus_per_node"] if per_node is None else per_node


def _check_common(p, num_npus, per_node):
    _gp().check_sizes(num_npus, per_node)


def _props(p, per_node, scaleup, extra=()):
    gp = _gp()
    props = gp.device_props(p, per_node)
    if scaleup:
        props.append(("scaleup_fabric", "simulated",
                      "scale-up as SimGrid flows: one port link per NPU into its "
                      "server's switch (the scaleup cluster below)"))
    return props + list(extra)


def _scaleup_cluster(p, num_npus, per_node):
    """The port hosts of the simulated scale-up fabric (module comment)."""
    gp = _gp()
    return (
        "  <!-- Simulated scale-up fabric: port host sup-R is NPU R's scale-up port, one link of\n"
        "       scaleup_bandwidth_Bps and half the scale-up latency into a non-blocking switch\n"
        "       (NVSwitch / HCCS); only flows between NPUs of one server use it. -->\n"
        '  <cluster id="scaleup" prefix="sup-" radical="0-%d" suffix="" speed="1f" bw="%sBps" '
        'lat="%ss" sharing_policy="SPLITDUPLEX">\n'
        '    <prop id="npusim_port" value="scaleup"/>\n  </cluster>\n'
        % (num_npus - 1, gp.fmt(p["scaleup_bandwidth_Bps"]), gp.fmt(p["scaleup_latency_s"] / 2)))


def _wrap(p, title, lines, body, scaleup_text=""):
    gp = _gp()
    # The scale-up ports come first: SimGrid 3.32 checks every new host and
    # link name against every zone built so far, so 16K ports after the 500
    # zones of a Clos took 10 s more to load than before them.
    return (gp.header("npusim platform: %s" % title, lines) + gp.CONFIG
            + '  <zone id="world" routing="Full">\n'
            + ("" if not scaleup_text else _indent(scaleup_text, 2))
            + _indent(body, 4) + "  </zone>\n</platform>\n")


def _head(p, num_npus, per_node):
    """The first lines of every fabric's header comment."""
    return ["%d NPUs = %d servers x %d." % (num_npus, num_npus // per_node, per_node),
            "Host speed: %s." % p["speed_src"]]


def _ratio(o):
    """A ratio for a message: 4 -> '4', 1e308 -> '1e308'."""
    return ("%g" % o).replace("e+", "e")


def _oversub_text(o):
    return "%g:1" % o


def clos3_platform(preset, num_npus, per_node=None, leaf_hosts=32, leaves_per_pod=32,
                   oversub=(1.0, 1.0), scaleup=False, oversub_text=None):
    """3-tier Clos (module comment).  oversub = (leaf, pod spine): the ratio
    of down- to up-link capacity at that tier; 1 is non-blocking.
    oversub_text: --oversub as given, for messages."""
    gp = _gp()
    p = gp.PRESETS[preset]
    per_node = _per_node(p, per_node)
    _check_common(p, num_npus, per_node)
    for flag, value in (("--leaf-hosts", leaf_hosts), ("--leaves-per-pod", leaves_per_pod)):
        if not isinstance(value, int) or value < 1:
            raise ValueError("%s %s: expected a positive whole number" % (flag, value))
    if num_npus % leaf_hosts or (num_npus // leaf_hosts) % leaves_per_pod:
        raise ValueError("--npus %d is not a multiple of %d hosts per leaf x %d leaves per pod"
                         % (num_npus, leaf_hosts, leaves_per_pod))
    if len(oversub) != 2 or not all(math.isfinite(o) and o >= 1 for o in oversub):
        raise ValueError("--oversub %s: expected O1[,O2], ratios >= 1 (down-link over up-link "
                         "capacity)" % ",".join("%g" % o for o in oversub))
    bw, lat = p["nic_Bps"], p["link_latency_s"]
    pods = num_npus // (leaf_hosts * leaves_per_pod)
    leaves = num_npus // leaf_hosts
    # simrun counts the leaves' crossbar clusters (a host, its link up and
    # down); the zone routes, n(n + 1) for a group of n, are written one by
    # one, so they count here too.
    gp.check_elements(3 * num_npus + pods * leaves_per_pod * (leaves_per_pod + 1)
                      + (pods * (pods + 1) if pods > 1 else 0) + (3 * num_npus if scaleup else 0),
                      "--npus %d --leaf-hosts %d --leaves-per-pod %d (%d leaves in %d pod%s)"
                      % (num_npus, leaf_hosts, leaves_per_pod, leaves, pods,
                         "s" if pods > 1 else ""))
    given = "--oversub %s" % (oversub_text or ",".join(_ratio(o) for o in oversub))
    if pods == 1 and oversub_text is not None and "," in oversub_text:
        raise ValueError("%s: the pod-spine ratio O2 applies to a Clos of several pods; "
                         "--npus %d in leaves of %d and pods of %d leaves is 1 pod"
                         % (given, num_npus, leaf_hosts, leaves_per_pod))
    gp.check_link(given, "each leaf's up-link (%d hosts x %s B/s / %s)"
                  % (leaf_hosts, gp.fmt(bw), _ratio(oversub[0])), leaf_hosts * bw / oversub[0])
    if pods > 1:
        gp.check_link(given, "each pod's up-link (%d leaves x their up-link / %s)"
                      % (leaves_per_pod, _ratio(oversub[1])),
                      leaves_per_pod * (leaf_hosts * bw / oversub[0]) / oversub[1])
    taper = [("fabric_taper", gp.fmt(1.0 / max(oversub)),
              "up-link over down-link capacity of the most tapered tier (1/%g)" % max(oversub))]
    props = _props(p, per_node, scaleup, taper if max(oversub) > 1 else [])
    first_props, other_props = gp.props_xml(props), _bare_props(props)
    leaf_up = leaf_hosts * bw / oversub[0]
    pod_up = leaves_per_pod * leaf_up / oversub[1]
    pod_texts = []
    for pod in range(pods):
        leaves = []
        for l in range(leaves_per_pod):
            first = (pod * leaves_per_pod + l) * leaf_hosts
            cid = "pod%d-leaf%d" % (pod, l)
            leaves.append((cid, cid + "-gw", _leaf(cid, list(range(first, first + leaf_hosts)),
                                                   p["speed_flops"], bw, lat,
                                                   first_props if first == 0 else other_props)))
        pid = "pod%d" % pod
        pod_texts.append((pid, pid + "-r", _group(pid, leaves, [leaf_up] * leaves_per_pod, lat)))
    body = (_group("fabric", pod_texts, [pod_up] * pods, lat) if pods > 1
            else pod_texts[0][2])
    head = _head(p, num_npus, per_node)
    tail = ["Link latency: %s." % p["link_lat_src"],
            "Ranks of one server are consecutive (server = rank / npus_per_node)."]
    if pods == 1:  # one pod: a 2-tier leaf-spine Clos
        fabric = [
            "Scale-out: %s, one NIC link per NPU into a non-blocking 2-tier leaf-spine Clos:"
            % p["nic_src"],
            "%d hosts per leaf switch, %d leaves; each leaf's up-links to the spines are one"
            % (leaf_hosts, leaves_per_pod),
            "link of %s B/s (oversubscription %s): ECMP spread evenly over the spines, the"
            % (gp.fmt(leaf_up), _oversub_text(oversub[0])),
            "fluid model's view of a leaf's k parallel up-links.  Routes: same leaf 2 links,",
            "across leaves 4.  Built as zones (platforms/fabrics.py): a crossbar cluster per",
            "leaf joined by a Full zone; the same times as SimGrid's 2-level FAT_TREE on the",
            "shipped runs (docs/platform-format.md) and about 20% less simulation time, as",
            "routes are table look-ups.",
        ]
    else:
        fabric = [
            "Scale-out: %s, one NIC link per NPU into a 3-tier Clos: %d hosts per leaf switch,"
            % (p["nic_src"], leaf_hosts),
            "%d leaves per pod, %d pods; oversubscription leaf %s (up-link %s B/s per leaf),"
            % (leaves_per_pod, pods, _oversub_text(oversub[0]), gp.fmt(leaf_up)),
            "pod spine %s (up-link %s B/s per pod).  Routes: same leaf 2 links, same pod 4,"
            % (_oversub_text(oversub[1]), gp.fmt(pod_up)),
            "across pods 6.  Built as zones (platforms/fabrics.py): a crossbar cluster per leaf,",
            "a Full zone per pod, a Full zone over the pods (SimGrid's 3-level FAT_TREE takes",
            "8-15 s to load at 16K hosts).  3-tier Clos: Al-Fares, Loukissas & Vahdat,",
            "SIGCOMM 2008; oversubscribed tiers as in Meta's RoCE AI clusters (Gangidi et al.,",
            "SIGCOMM 2024: 1:7 between the cluster and aggregation tiers).",
        ]
    return _wrap(p, gp.title(p, per_node), head + fabric + tail, body,
                 _scaleup_cluster(p, num_npus, per_node) if scaleup else "")


# How a transfer between two NPUs uses the two planes of a dual-plane NIC
# (nic_plane_policy; sim/net/transport.c, docs/platform-format.md).
PLANE_POLICIES = ["split", "hash"]
PLANE_POLICY_TEXT = {
    "split": "split: every transfer in two halves, one per plane, as NCCL spreads a "
             "collective's or a send's channels over the NIC's ports",
    "hash": "hash: every transfer whole on one plane, picked by a hash of its two NPU "
            "ranks (one queue pair on one port, as an ECMP or bonding hash places a flow)",
}


def rail_platform(preset, num_npus, per_node=None, su_servers=None, oversub=1.0, pxn=False,
                  scaleup=False, planes=1, plane_policy="split"):
    """Rail-optimised (module comment): leaf (SU s, rail i) holds NIC i of the
    su_servers servers of SU s; every leaf has su_servers / oversub up-links
    of the NIC bandwidth, one to each spine.  su_servers defaults to the
    smallest power of two, 2 at least, that keeps the leaves at most gen_platform's
    MAX_LEAVES (SimGrid's build time grows with the leaves).  planes=2: the
    dual-plane form (module comment), each NIC's bandwidth split over two
    ports, plane_policy how a transfer uses them ("split" or "hash")."""
    gp = _gp()
    p = gp.PRESETS[preset]
    per_node = _per_node(p, per_node)
    _check_common(p, num_npus, per_node)
    servers = num_npus // per_node
    if su_servers is None:  # a rail needs two servers at least: a leaf of one NIC is no switch
        su_servers = 2
        while servers % (su_servers * 2) == 0 and servers // su_servers * per_node > gp.MAX_LEAVES:
            su_servers *= 2
    if su_servers < 2 or servers % su_servers:
        raise ValueError("%d servers are not a multiple of %d servers per scalable unit (at "
                         "least 2)" % (servers, su_servers))
    spines = su_servers / oversub if math.isfinite(oversub) and oversub >= 1 else 0.5
    if spines != int(spines):
        raise ValueError("--oversub %g: expected a ratio >= 1 that divides the %d servers of a "
                         "scalable unit" % (oversub, su_servers))
    if planes not in (1, 2):
        raise ValueError("--planes %d: expected 1 or 2" % planes)
    if plane_policy not in PLANE_POLICIES:
        raise ValueError("--plane-policy %s: expected one of %s"
                         % (plane_policy, ", ".join(PLANE_POLICIES)))
    bw, lat = p["nic_Bps"] / planes, p["link_latency_s"]
    sus = servers // su_servers
    leaves = sus * per_node
    gp.check_elements(planes * gp.fat_tree_elements([su_servers, leaves], [1, int(spines)], [1, 1])
                      + (3 * num_npus if scaleup else 0),
                      "--npus %d --fabric rail (%d leaves of %d servers)"
                      % (num_npus, leaves, su_servers))
    order = [(s * su_servers + k) * per_node + rail
             for s in range(sus) for rail in range(per_node) for k in range(su_servers)]
    topo = "2;%d,%d;1,%d;1,1" % (su_servers, leaves, int(spines))
    extra = [("cross_rail_pxn", "1" if pxn else "0",
              "1: cross-rail traffic first crosses the scale-up fabric to the NPU on the "
              "destination's rail (NCCL PXN); 0: through the spine")]
    if planes == 2:
        extra += [("nic_planes", "2", "dual-plane (Alibaba HPN, SIGCOMM 2024): each NIC's two "
                   "ports on two independent planes; plane 1's ports are the pl1- hosts below"),
                  ("nic_plane_policy", plane_policy, PLANE_POLICY_TEXT[plane_policy])]
    props = _props(p, per_node, scaleup, extra)
    radical = ",".join(str(r) for r in order)
    body = ('<cluster id="npus" prefix="npu-" radical="%s" suffix="" speed="%sf"\n'
            '         bw="%sBps" lat="%ss" sharing_policy="SPLITDUPLEX"\n'
            '         topology="FAT_TREE" topo_parameters="%s">\n%s</cluster>\n'
            % (radical, gp.fmt(p["speed_flops"]), gp.fmt(bw),
               gp.fmt(lat), topo, _strip(gp.props_xml(props))))
    if planes == 2:
        body += ('<!-- Plane 1: port host pl1-R is the second port of NPU R\'s NIC, on a copy of\n'
                 '     plane 0\'s rail fabric (its own rail leaves and spines); no link joins\n'
                 '     the planes, a port\'s traffic stays on its plane. -->\n'
                 '<cluster id="plane1" prefix="pl1-" radical="%s" suffix="" speed="1f"\n'
                 '         bw="%sBps" lat="%ss" sharing_policy="SPLITDUPLEX"\n'
                 '         topology="FAT_TREE" topo_parameters="%s">\n'
                 '  <prop id="npusim_port" value="plane1"/>\n</cluster>\n'
                 % (radical, gp.fmt(bw), gp.fmt(lat), topo))
    lines = [
        "%d NPUs = %d servers x %d." % (num_npus, servers, per_node),
        "Host speed: %s." % p["speed_src"],
        "Scale-out: %s; rail-optimised: NIC i of every server on rail i.  %d scalable"
        % (p["nic_src"], sus),
        "units of %d servers, one leaf switch per rail and SU (%d leaves) with %d up-links,"
        % (su_servers, leaves, int(spines)),
        "one to each spine (%s).  SimGrid FAT_TREE \"%s\" with the hosts listed in rail"
        % (_oversub_text(oversub), topo),
        "order.  Routes: same rail and SU 2 links, anything else 4 (through a spine);",
        "cross-rail PXN: %s.  Layout of NVIDIA's DGX SuperPOD reference architecture"
        % ("on" if pxn else "off"),
        "(32 servers and 8 rail leaves per SU, leaves joined by spines); PXN: NCCL 2.12.",
        "Link latency: %s." % p["link_lat_src"],
    ]
    if planes == 2:
        lines[-1:-1] = [
            "Dual-plane (Alibaba HPN, Qian et al., SIGCOMM 2024): every NIC has two ports of",
            "%s B/s (half of the NIC's %s B/s), port k on plane k; each plane is the rail"
            % (gp.fmt(bw), gp.fmt(p["nic_Bps"])),
            "fabric below with its own leaves and spines, and no link joins the planes.",
            "A transfer: %s." % PLANE_POLICY_TEXT[plane_policy],
        ]
    return _wrap(p, gp.title(p, per_node), lines, body,
                 _scaleup_cluster(p, num_npus, per_node) if scaleup else "")


def torus_platform(preset, num_npus, dims, per_node=None, scaleup=False):
    """SimGrid TORUS cluster: dims "X,Y,Z" with X*Y*Z = num_npus; every host
    has one link per dimension and direction's neighbour (SimGrid's TorusZone)."""
    gp = _gp()
    p = gp.PRESETS[preset]
    per_node = _per_node(p, per_node)
    _check_common(p, num_npus, per_node)
    try:
        d = gp.whole_numbers(dims)
    except ValueError:
        d = [0]
    if len(d) not in (2, 3) or min(d) < 1:
        raise ValueError("--torus %s: expected X,Y[,Z], 2 or 3 positive whole numbers whose "
                         "product is --npus" % dims)
    if math.prod(d) != num_npus:
        raise ValueError("--torus %s holds %d hosts, not --npus %d"
                         % (dims, math.prod(d), num_npus))
    # a host, its private link up and down, and a link per dimension and direction
    gp.check_elements((3 + 2 * len(d)) * num_npus + (3 * num_npus if scaleup else 0),
                      "--torus %s" % dims)
    props = _props(p, per_node, scaleup)
    body = gp.cluster_xml(num_npus, p["speed_flops"], p["nic_Bps"], p["link_latency_s"],
                          '\n           topology="TORUS" topo_parameters="%s"' % dims, props)
    lines = _head(p, num_npus, per_node) + [
        "Scale-out: a %s torus (SimGrid TORUS cluster), every link %s B/s (%s)."
        % (dims.replace(",", "x"), gp.fmt(p["nic_Bps"]), p["nic_src"]),
        "Torus-connected accelerators: TPU v4, 3D torus (Jouppi et al., ISCA 2023).",
        "Link latency: %s." % p["link_lat_src"],
    ]
    return _wrap(p, gp.title(p, per_node), lines, _strip(body),
                 _scaleup_cluster(p, num_npus, per_node) if scaleup else "")


def dragonfly_platform(preset, num_npus, params, per_node=None, scaleup=False):
    """SimGrid DRAGONFLY cluster: "groups,glinks;chassis,clinks;routers,rlinks;nodes"."""
    gp = _gp()
    p = gp.PRESETS[preset]
    per_node = _per_node(p, per_node)
    _check_common(p, num_npus, per_node)
    try:
        parts = [gp.whole_numbers(part) for part in params.split(";")]
    except ValueError:
        parts = []
    if ([len(part) for part in parts] != [2, 2, 2, 1]
            or not all(1 <= x <= gp.MAX_NPUS for part in parts for x in part)):
        raise ValueError('--dragonfly "%s": expected "G,GL;C,CL;R,RL;N", whole numbers from 1 '
                         "to %d" % (params, gp.MAX_NPUS))
    hosts = parts[0][0] * parts[1][0] * parts[2][0] * parts[3][0]
    if hosts != num_npus:
        raise ValueError('--dragonfly "%s" holds %d hosts, not --npus %d'
                         % (params, hosts, num_npus))
    if parts[0][0] > parts[2][0]:
        # SimGrid 3.32 sends traffic for group g through router g of the
        # sender's chassis: more groups than routers per chassis reads past
        # its tables (a crash on this machine).
        raise ValueError('--dragonfly "%s": %d groups but %d routers per chassis; SimGrid '
                         "needs groups <= routers per chassis" % (params, parts[0][0], parts[2][0]))
    # simrun's count (sim/net/platform_file.c): a host and its links, the routers, the
    # links inside a chassis and a group, one between every two groups
    g, c, r = parts[0][0], parts[1][0], parts[2][0]
    gp.check_elements(3 * hosts + g * c * r + g * c * r * (r - 1) // 2 + g * r * c * (c - 1) // 2
                      + g * (g - 1) // 2 + (3 * num_npus if scaleup else 0),
                      '--dragonfly "%s"' % params)
    props = _props(p, per_node, scaleup)
    body = gp.cluster_xml(num_npus, p["speed_flops"], p["nic_Bps"], p["link_latency_s"],
                          '\n           topology="DRAGONFLY" topo_parameters="%s"' % params, props)
    lines = _head(p, num_npus, per_node) + [
        'Scale-out: dragonfly "%s" (SimGrid DRAGONFLY cluster: groups,links between'
        % params,
        "groups; chassis per group,links; routers per chassis,links; hosts per router),",
        "every link %s B/s (%s)." % (gp.fmt(p["nic_Bps"]), p["nic_src"]),
        "Dragonfly: Kim, Dally, Scott & Abts, ISCA 2008.",
        "Link latency: %s." % p["link_lat_src"],
    ]
    return _wrap(p, gp.title(p, per_node), lines, _strip(body),
                 _scaleup_cluster(p, num_npus, per_node) if scaleup else "")


def _strip(text):
    return "\n".join(l[2:] if l.startswith("  ") else l for l in text.split("\n"))


def fat_tree_with_scaleup(p, num_npus, per_node, topo, lines):
    """gen_platform's 2-level FAT_TREE platform plus the simulated scale-up
    fabric (both clusters inside one zone)."""
    gp = _gp()
    props = _props(p, per_node, True)
    body = gp.cluster_xml(num_npus, p["speed_flops"], p["nic_Bps"], p["link_latency_s"],
                          '\n           topology="FAT_TREE" topo_parameters="%s"' % topo, props)
    return _wrap(p, gp.title(p, per_node),
                 lines + ["Scale-up fabric simulated as flows (scaleup cluster)."],
                 _strip(body), _scaleup_cluster(p, num_npus, per_node))


FABRICS = ["fat-tree", "clos3", "rail", "torus", "dragonfly"]


def add_arguments(ap):
    """gen_platform.py's options for the fabrics of this module (with --preset)."""
    ap.add_argument(
        "--fabric", choices=FABRICS,
        help="with --preset: the scale-out fabric (default fat-tree: gen_platform's 2-level "
        "FAT_TREE; clos3: 3-tier Clos as zones; rail: rail-optimised; torus; dragonfly; "
        "see platforms/fabrics.py and docs/platform-format.md)")
    ap.add_argument(
        "--oversub", metavar="O1[,O2]",
        help="clos3: down/up capacity ratio of the leaf and pod-spine tiers (default 1,1); "
        "rail: of the rail leaves (default 1)")
    ap.add_argument("--leaf-hosts", type=int, metavar="K",
                    help="clos3: NICs per leaf switch (default 64)")
    ap.add_argument("--leaves-per-pod", type=int, metavar="L",
                    help="clos3: leaves per pod (default 16)")
    ap.add_argument("--su-servers", type=int, metavar="S",
                    help="rail: servers per scalable unit, i.e. per rail leaf (default: the "
                    "smallest power of two keeping at most 128 leaves)")
    ap.add_argument("--pxn", action="store_true",
                    help="rail: cross-rail traffic crosses the scale-up fabric first "
                    "(cross_rail_pxn=1, NCCL's PXN) instead of the spine")
    ap.add_argument("--torus", metavar="X,Y[,Z]", help="torus: dimensions, product = --npus")
    ap.add_argument("--dragonfly", metavar="G,GL;C,CL;R,RL;N",
                    help="dragonfly: SimGrid's DRAGONFLY parameters (groups, chassis per "
                    "group, routers per chassis, hosts per router, each level with its link "
                    "count); G must not exceed R")
    ap.add_argument("--planes", type=int, choices=[1, 2],
                    help="rail: 1 (default) or 2: dual-plane, each NIC's bandwidth split over "
                    "two ports on two independent copies of the rail fabric (Alibaba HPN)")
    ap.add_argument("--plane-policy", choices=PLANE_POLICIES,
                    help="rail --planes 2: how a transfer uses the planes: split (default: "
                    "half on each, NCCL's channels over both ports) or hash (whole on the "
                    "plane a hash of the two NPU ranks picks: one queue pair on one port)")
    ap.add_argument("--scaleup-sim", action="store_true",
                    help="any fabric: simulate the scale-up fabric as flows "
                    "(scaleup_fabric=simulated and a port host per NPU)")


# The fabric options: (option's dest, option, the fabrics it applies to).  An
# option given where it does not apply is refused, not ignored.
FABRIC_OPTIONS = [
    ("topo", "--topo", ["fat-tree"]),
    ("oversub", "--oversub", ["clos3", "rail"]),
    ("leaf_hosts", "--leaf-hosts", ["clos3"]),
    ("leaves_per_pod", "--leaves-per-pod", ["clos3"]),
    ("su_servers", "--su-servers", ["rail"]),
    ("pxn", "--pxn", ["rail"]),
    ("planes", "--planes", ["rail"]),
    ("plane_policy", "--plane-policy", ["rail"]),
    ("torus", "--torus", ["torus"]),
    ("dragonfly", "--dragonfly", ["dragonfly"]),
]


def given(flag, value):
    """An option as the command line gave it: "--pxn", "--planes 2"."""
    return flag if value is True else "%s %s" % (flag, value)


def check_arguments(a):
    """Refuses a fabric option that does not apply to a.fabric (ValueError)."""
    fabric = a.fabric or "fat-tree"
    for dest, flag, where in FABRIC_OPTIONS:
        value = getattr(a, dest)
        if value is not None and value is not False and fabric not in where:
            raise ValueError("%s: applies to %s only, not --fabric %s"
                             % (given(flag, value), " and ".join("--fabric " + f for f in where),
                                fabric))
    if a.plane_policy is not None and a.planes != 2:
        raise ValueError("--plane-policy %s: applies to --fabric rail --planes 2 only (one "
                         "plane has nothing to split or hash)" % a.plane_policy)


def _oversub(text, most):
    """--oversub's text -> up to `most` ratios, each finite and >= 1."""
    try:
        o = [float(x) for x in text.split(",")]
    except ValueError:
        o = []
    if not 1 <= len(o) <= most or not all(math.isfinite(x) and x >= 1 for x in o):
        raise ValueError("--oversub %s: expected %s, ratios >= 1 (down-link over up-link "
                         "capacity)" % (text, "O1[,O2]" if most == 2 else "one ratio O1"))
    return o


def build(a, fat_tree_platform):
    """The platform text for gen_platform's parsed options a (--preset given)."""
    check_arguments(a)
    fabric = a.fabric or "fat-tree"
    if fabric == "fat-tree":
        return fat_tree_platform(a.preset, a.npus, a.npus_per_node, a.topo, a.scaleup_sim)
    if fabric == "clos3":
        o = (_oversub(a.oversub or "1", 2) + [1.0])[:2]
        return clos3_platform(a.preset, a.npus, a.npus_per_node,
                              64 if a.leaf_hosts is None else a.leaf_hosts,
                              16 if a.leaves_per_pod is None else a.leaves_per_pod,
                              tuple(o), a.scaleup_sim, a.oversub)
    if fabric == "rail":
        if a.su_servers is not None and a.su_servers < 2:
            raise ValueError("--su-servers %d: expected at least 2 servers per scalable unit"
                             % a.su_servers)
        return rail_platform(a.preset, a.npus, a.npus_per_node, a.su_servers,
                             _oversub(a.oversub or "1", 1)[0], a.pxn, a.scaleup_sim,
                             a.planes or 1, a.plane_policy or "split")
    if fabric == "torus":
        if a.torus is None:
            raise ValueError("--fabric torus needs --torus X,Y[,Z]")
        return torus_platform(a.preset, a.npus, a.torus, a.npus_per_node, a.scaleup_sim)
    if a.dragonfly is None:
        raise ValueError("--fabric dragonfly needs --dragonfly G,GL;C,CL;R,RL;N")
    return dragonfly_platform(a.preset, a.npus, a.dragonfly, a.npus_per_node, a.scaleup_sim)
