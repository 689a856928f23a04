# Turns deploy/bench/run's raw samples into the markdown report: medians with
# ratios to nginx, the spread (min-max over the repeats), and one pass/fail
# line per target.
#
# Input: one sample per line, tab-separated: repeat, target (direct | nginx |
# modelproxy | haproxy), metric, value. A form with no sample at all (run
# --only) prints no table and no verdict. Metrics:
#   rps         requests/s at 64 connections (non-stream chat completion)
#   cpu_req     the proxy's CPU µs per request over that run
#   p50_slice, p99_slice  µs at 1 connection (wrk's histogram), one slice;
#               a round's p50 and p99 are the medians of its slices' (END)
#   sps         200-event streams/s at 16 connections
#   cpu_stream  the proxy's CPU µs per stream over that run
#   rss_load    MiB, after a repeat's load runs
#   rss_idle    MiB, with 1000 idle keep-alive connections
#   errors      wrk's socket errors plus non-2xx answers, per run
#   rps_F, cpu_req_F, hs_F  the HTTPS-upstream forms F = tls (the chat
#               request), 200k and 1m (agent requests of 204800 and 1048576
#               bytes), and tsse (200-event streams at 16 connections, so
#               their figures are per stream): requests/s at 64 connections, the proxy's CPU µs per
#               request, new upstream connections (TLS handshakes) per 1000 requests
#               beyond one per client connection (deploy/bench/run)
#   fullhs_F    full TLS handshakes (not resumed sessions) per 1000 requests, all of them
#   st_*        the many long streams (N streams at once, 10 events/s each):
#     st_rss      KiB of proxy RSS per open stream: (RSS with all open - RSS
#                 just before the client) / N
#     st_cpu      the proxy's CPU µs per event delivered
#     st_p50, st_p99, st_max  µs from an event's send to its arrival at the
#                 client (every event of the run in one histogram)
#     st_lost, st_failed, st_disorder  events that never came, streams that
#                 failed, events out of sequence (all must be 0)
#     st_load     the load side's CPU (client and paced upstream), % of its core
#     st_late99   p99 µs the paced upstream wrote behind its schedule
#     st_waited   ms the proxy's threads waited, runnable, for their core over
#                 the run (/proc schedstat): what neighbours took from it
#     st_streams, st_seconds  the form's size: streams at once, seconds each
#   probe_p99, probe_max  (target machine) µs a 1 ms sleeper on the proxy's
#               idle core woke late: the machine's own share of any delay
# A metric with no sample (the direct target has no proxy process) prints "-".
BEGIN {
    FS = "\t"; ntargets = split("direct nginx modelproxy", targets, " ")
    nstargets = split("direct nginx modelproxy haproxy", stargets, " ")
}

function add(r, t, m, x,    key) {
    key = t SUBSEP m; n[key]++; v[key, n[key]] = x
    byround[r, t, m] = x; if (r > rounds) rounds = r
}
$3 ~ /_slice$/ { k = $1 SUBSEP $2 SUBSEP substr($3, 1, 3); sn[k]++; sv[k, sn[k]] = $4 + 0; has_plain = 1; next }
{
    add($1 + 0, $2, $3, $4 + 0); if ($3 == "errors") errors[$2] += $4
    if ($3 == "st_lost" || $3 == "st_failed" || $3 == "st_disorder") total[$2, $3] += $4
    if ($3 ~ /^(st|probe)_/) has_streams = 1
    else if ($3 ~ /^(rps|cpu_req|hs)_/) has_tls = 1
    else if ($3 != "errors") has_plain = 1
}

# The median of a[1..k], sorting a in place.
function middle(a, k,    i, j, t) {
    for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
function median(key,    k, i, a) {
    k = n[key]
    if (k == 0) return ""
    for (i = 1; i <= k; i++) a[i] = v[key, i]
    return middle(a, k)
}
function lo(key,    i, m) { m = v[key, 1]; for (i = 2; i <= n[key]; i++) if (v[key, i] < m) m = v[key, i]; return m }
function hi(key,    i, m) { m = v[key, 1]; for (i = 2; i <= n[key]; i++) if (v[key, i] > m) m = v[key, i]; return m }
function fmt(x, digits) { return x == "" ? "-" : sprintf("%." digits "f", x) }
function med(t, m, digits) { return fmt(median(t SUBSEP m), digits) }
function spread(t, m, digits,    key) {
    key = t SUBSEP m
    return n[key] ? fmt(lo(key), digits) "-" fmt(hi(key), digits) : "-"
}
function ratio(t, m,    a, b) {
    a = median(t SUBSEP m); b = median("nginx" SUBSEP m)
    return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2fx", a / b)
}
function delta(t, m,    a, b) {
    a = median(t SUBSEP m); b = median("nginx" SUBSEP m)
    return (a == "" || b == "") ? "-" : sprintf("%+.0f", a - b)
}
function delta1(t, m,    a, b) {
    a = median(t SUBSEP m); b = median("nginx" SUBSEP m)
    return (a == "" || b == "") ? "-" : sprintf("%+.2f", a - b)
}
# t's median over direct's (the upstream itself): what the proxy adds.
function added(t, m,    a, b) {
    a = median(t SUBSEP m); b = median("direct" SUBSEP m)
    return (a == "" || b == "" || t == "direct") ? "-" : sprintf("%+.0f", a - b)
}
function verdict(ok) { return ok ? "PASS" : "FAIL" }
# modelproxy's figure over nginx's, round by round: both were taken in the
# same round, their slices interleaved, so each ratio shares that round's
# noise (nginx's own CPU per request moves by a quarter between rounds).
function per_round(m,    r, out, a, b) {
    return per_round_of("modelproxy", m)
}
function per_round_of(t, m,    r, out, a, b) {
    out = ""
    for (r = 1; r <= rounds; r++) {
        a = byround[r, t, m]; b = byround[r, "nginx", m]
        if (a == "" || b == "" || b == 0) continue
        out = out (out == "" ? "" : ", ") sprintf("%.2f", a / b)
    }
    return out == "" ? "-" : out
}

END {
    # A round's p50 (p99) for a target: the median of its slices'.
    for (k in sn) {
        split(k, part, SUBSEP)
        delete a
        for (i = 1; i <= sn[k]; i++) a[i] = sv[k, i]
        add(part[1] + 0, part[2], part[3], middle(a, sn[k]))
    }
    if (has_plain) {
        print "| proxy | CPU µs / request | x nginx | CPU µs / 200-event stream | x nginx | p50 / p99 µs, 1 conn | vs nginx µs | RSS MiB, 1000 idle conns | req/s, 64 conns | x nginx | streams/s, 16 conns | x nginx | RSS MiB after load |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        for (i = 1; i <= ntargets; i++) {
            t = targets[i]
            printf "| %s | %s | %s | %s | %s | %s / %s | %s / %s | %s | %s | %s | %s | %s | %s |\n", t,
                med(t, "cpu_req", 1), ratio(t, "cpu_req"), med(t, "cpu_stream", 0), ratio(t, "cpu_stream"),
                med(t, "p50", 0), med(t, "p99", 0), delta(t, "p50"), delta(t, "p99"),
                med(t, "rss_idle", 1), med(t, "rps", 0), ratio(t, "rps"), med(t, "sps", 0), ratio(t, "sps"),
                med(t, "rss_load", 1)
        }
        print ""
        print "Spread over the repeats (min-max):"
        print ""
        print "| proxy | CPU µs / request | CPU µs / stream | p50 µs | p99 µs | RSS MiB idle | req/s | streams/s | RSS MiB after load | failed requests |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        for (i = 1; i <= ntargets; i++) {
            t = targets[i]
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", t,
                spread(t, "cpu_req", 1), spread(t, "cpu_stream", 0), spread(t, "p50", 0), spread(t, "p99", 0),
                spread(t, "rss_idle", 1), spread(t, "rps", 0), spread(t, "sps", 0), spread(t, "rss_load", 1), errors[t]
        }
        print ""
        print "modelproxy over nginx in each round: CPU per request " per_round("cpu_req") "; CPU per stream " per_round("cpu_stream")
        print ""
    }
    if (has_tls) {
        print "HTTPS upstream (proxy_ssl with keep-alive for nginx), 64 connections:"
        print ""
        print "| proxy | request | CPU µs / request | x nginx | spread | req/s | MB/s of request body | upstream handshakes / 1000 requests, beyond 1 per client connection | full (not resumed) TLS handshakes / 1000 requests |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        # tsse: a 200-event stream at 16 connections, its figures per stream.
        nforms = split("tls 200k 1m tsse", forms, " ")
        split("75 B chat,200 KB agent,1 MB agent,200-event stream (per stream; 16 conns)", names, ",")
        split("75 204800 1048576 0", sizes, " ")
        for (i = 2; i <= ntargets; i++) {
            t = targets[i]
            for (f = 1; f <= nforms; f++) {
                r = median(t SUBSEP "rps_" forms[f])
                printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", t, names[f], med(t, "cpu_req_" forms[f], 1),
                    ratio(t, "cpu_req_" forms[f]), spread(t, "cpu_req_" forms[f], 1), fmt(r, 0),
                    r == "" || sizes[f] == 0 ? "-" : sprintf("%.0f", r * sizes[f] / 1000000), med(t, "hs_" forms[f], 2),
                    med(t, "fullhs_" forms[f], 2)
            }
        }
        print ""
        print "modelproxy over nginx in each round, HTTPS upstream: chat " per_round("cpu_req_tls") "; 200 KB " per_round("cpu_req_200k") "; 1 MB " per_round("cpu_req_1m") "; stream " per_round("cpu_req_tsse")
        print ""
    }
    if (has_streams) {
        for (i = 1; i <= nstargets; i++)
            if (n[stargets[i] SUBSEP "st_streams"]) { count = median(stargets[i] SUBSEP "st_streams"); length_s = median(stargets[i] SUBSEP "st_seconds") }
        printf "Many long streams: %d at once, each 10 events/s for %d s (fresh proxies; an event's delay is from the upstream's write to the client's read):\n", count, length_s
        print ""
        print "| target | RSS KiB / open stream | x nginx | vs nginx KiB | CPU µs / event | x nginx | delay p50 / p99 / max µs | added vs direct p50 / p99 / max µs | lost events / failed streams | load side % of its core | upstream late p99 µs |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        for (i = 1; i <= nstargets; i++) {
            t = stargets[i]
            if (!n[t SUBSEP "st_p99"]) continue
            printf "| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s / %s / %s | %d / %d | %s | %s |\n", t,
                med(t, "st_rss", 2), ratio(t, "st_rss"), delta1(t, "st_rss"), med(t, "st_cpu", 2), ratio(t, "st_cpu"),
                med(t, "st_p50", 0), med(t, "st_p99", 0), med(t, "st_max", 0),
                added(t, "st_p50"), added(t, "st_p99"), added(t, "st_max"),
                total[t, "st_lost"], total[t, "st_failed"], med(t, "st_load", 1), med(t, "st_late99", 0)
        }
        print ""
        print "Spread over the repeats (min-max):"
        print ""
        print "| target | RSS KiB / open stream | CPU µs / event | delay p50 µs | delay p99 µs | delay max µs | events out of sequence | proxy waited for its core, ms per run |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- |"
        for (i = 1; i <= nstargets; i++) {
            t = stargets[i]
            if (!n[t SUBSEP "st_p99"]) continue
            printf "| %s | %s | %s | %s | %s | %s | %d | %s |\n", t, spread(t, "st_rss", 2), spread(t, "st_cpu", 2),
                spread(t, "st_p50", 0), spread(t, "st_p99", 0), spread(t, "st_max", 0), total[t, "st_disorder"],
                spread(t, "st_waited", 0)
        }
        print ""
        print "modelproxy over nginx in each round, long streams: CPU per event " per_round("st_cpu") "; RSS per open stream " per_round("st_rss")
        print ""
        if (n["machine" SUBSEP "probe_max"]) {
            printf "The machine alone, a 1 ms sleep on the proxy's idle core before each round's streams: woke late p99 %s µs, at most %s µs (max over rounds %s): a delay up to that is the machine's, whichever proxy it passed.\n",
                med("machine", "probe_p99", 0), med("machine", "probe_max", 0), fmt(hi("machine" SUBSEP "probe_max"), 0)
            print ""
        }
    }
    m = "modelproxy"; g = "nginx"
    if (has_plain) {
        cr = median(m SUBSEP "cpu_req"); gr = median(g SUBSEP "cpu_req")
        cs = median(m SUBSEP "cpu_stream"); gs = median(g SUBSEP "cpu_stream")
        p50 = median(m SUBSEP "p50"); g50 = median(g SUBSEP "p50")
        p99 = median(m SUBSEP "p99"); g99 = median(g SUBSEP "p99")
        idle = median(m SUBSEP "rss_idle")
        if (cr == "" || gr == "" || cs == "" || gs == "" || p50 == "" || p99 == "" || idle == "") {
            print "- plain form: not judged (a figure is missing)"
        } else {
            printf "- %s CPU per non-stream request <= 1.1x nginx: %.1f vs %.1f µs (%.2fx)\n", verdict(cr <= 1.1 * gr), cr, gr, cr / gr
            printf "- %s CPU per 200-event stream <= 1.5x nginx, every event checked: %.0f vs %.0f µs (%.2fx)\n", verdict(cs <= 1.5 * gs), cs, gs, cs / gs
            printf "- %s p50 at 1 connection <= nginx + 10 µs: %.0f vs %.0f µs\n", verdict(p50 <= g50 + 10), p50, g50
            printf "- %s p99 at 1 connection <= nginx + 50 µs: %.0f vs %.0f µs\n", verdict(p99 <= g99 + 50), p99, g99
            printf "- %s RSS with 1000 idle connections <= 24 MiB: %.1f MiB\n", verdict(idle <= 24), idle
        }
    }
    if (has_tls) {
        ct = median(m SUBSEP "cpu_req_tls"); gt = median(g SUBSEP "cpu_req_tls")
        c1 = median(m SUBSEP "cpu_req_1m"); g1 = median(g SUBSEP "cpu_req_1m")
        cs = median(m SUBSEP "cpu_req_tsse"); gs = median(g SUBSEP "cpu_req_tsse")
        if (ct != "" && gt != "" && c1 != "" && g1 != "" && cs != "" && gs != "") {
            printf "- %s CPU per request, HTTPS upstream <= 1.1x nginx: %.1f vs %.1f µs (%.2fx)\n", verdict(ct <= 1.1 * gt), ct, gt, ct / gt
            printf "- %s CPU per 200-event stream, HTTPS upstream <= 1.1x nginx, every event checked: %.0f vs %.0f µs (%.2fx)\n", verdict(cs <= 1.1 * gs), cs, gs, cs / gs
            printf "- %s CPU per 1 MB request, HTTPS upstream <= 1.2x nginx: %.1f vs %.1f µs (%.2fx)\n", verdict(c1 <= 1.2 * g1), c1, g1, c1 / g1
        }
    }
    if (has_streams) {
        sr = median(m SUBSEP "st_rss"); gsr = median(g SUBSEP "st_rss")
        sc = median(m SUBSEP "st_cpu"); gsc = median(g SUBSEP "st_cpu")
        s99 = median(m SUBSEP "st_p99"); smax = median(m SUBSEP "st_max")
        d99 = median("direct" SUBSEP "st_p99"); dmax = median("direct" SUBSEP "st_max")
        if (sr == "" || gsr == "" || sc == "" || gsc == "" || s99 == "" || d99 == "") {
            print "- long streams: not judged (a figure is missing)"
        } else {
            printf "- %s RSS per open stream <= nginx + 4 KiB: %.2f vs %.2f KiB\n", verdict(sr <= gsr + 4), sr, gsr
            printf "- %s delay added per event, p99 < 1 ms: %+.0f µs (%.0f vs %.0f direct)\n", verdict(s99 - d99 < 1000), s99 - d99, s99, d99
            printf "- %s delay added per event, max < 10 ms: %+.0f µs (%.0f vs %.0f direct)\n", verdict(smax - dmax < 10000), smax - dmax, smax, dmax
            printf "- %s CPU per event <= 1.5x nginx, every event checked: %.2f vs %.2f µs (%.2fx)\n", verdict(sc <= 1.5 * gsc), sc, gsc, gsc ? sc / gsc : 0
        }
        lost = ""; bad = 0
        for (i = 1; i <= nstargets; i++) {
            t = stargets[i]
            if (!n[t SUBSEP "st_p99"]) continue
            lost = lost (lost == "" ? "" : ", ") sprintf("%s %d lost / %d failed", t, total[t, "st_lost"], total[t, "st_failed"])
            bad += total[t, "st_lost"] + total[t, "st_failed"] + total[t, "st_disorder"]
        }
        printf "- %s every event delivered, in order, on every target: %s\n", verdict(bad == 0), lost
        load = 0; late = 0
        for (i = 1; i <= nstargets; i++) {
            t = stargets[i]
            if (n[t SUBSEP "st_load"] && hi(t SUBSEP "st_load") > load) load = hi(t SUBSEP "st_load")
            if (n[t SUBSEP "st_late99"] && hi(t SUBSEP "st_late99") > late) late = hi(t SUBSEP "st_late99")
        }
        if (load > 80 || late > 1000)
            printf "- WARNING: the load side's core was busy (up to %.0f%%, the upstream's writes p99 up to %d µs behind schedule): the client there may have read events late too, in every target's delays\n", load, late
    }
    if (errors[m] + errors[g] + errors["direct"] > 0)
        print "- WARNING: some requests failed (see the failed requests column); their runs' figures are suspect"
}
