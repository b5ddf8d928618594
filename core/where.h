/* SPDX-License-Identifier: MIT */
/*
 * where.h - where a process runs, from its /proc/<pid>/cgroup: the
 * container, the Kubernetes pod and QoS class, the systemd unit.
 *
 * Pure: text in, fields out; every field empty if the text does not say.
 * Each line of the file is "hierarchy:controllers:path" (cgroup v1), or
 * "0::path" (v2); every line is looked at, and the one that says the
 * most is taken (a container id over a pod over a unit; among equals,
 * the v2 line, then name=systemd's, then the first).  Paths may be
 * relative to the reader's cgroup namespace ("/../../kubepods-..."):
 * only the components that are there count.
 *
 * The container: the last component that is 64 lowercase hex digits,
 * alone or after the last '-' or ':' of its name, with ".scope" after it
 * or nothing, as the runtimes name their cgroups:
 *
 *   docker (cgroupfs)         /docker/<id>
 *   docker (systemd)          /system.slice/docker-<id>.scope
 *   Kubernetes (cgroupfs)     /kubepods/<qos>/pod<uid>/<id>, /kubepods/pod<uid>/<id>
 *   containerd CRI (systemd)  .../kubepods-<qos>-pod<uid_>.slice/cri-containerd-<id>.scope
 *   containerd, v1 form       .../kubepods-<qos>-pod<uid_>.slice:cri-containerd:<id>
 *   cri-o                     crio-<id>.scope, /kubepods/.../crio-<id>
 *   podman                    /machine.slice/libpod-<id>.scope, /libpod_parent/libpod-<id>
 *
 * but not a runtime's monitor (a name with "conmon" in it) nor a mount
 * unit (".mount").  Other ids (ECS Fargate's "<32 hex>-<digits>", a
 * UUID) are not taken: a container id here is what kube-state-metrics'
 * container_id holds after its "<runtime>://".
 *
 * The pod: "pod<uid>" under a kubepods cgroup (cgroupfs driver), or
 * "kubepods[-<qos>]-pod<uid>.slice" (systemd driver, '-' of the uid
 * written '_'), the uid 32 to 36 hex digits and dashes.  Its QoS class,
 * as Kubernetes spells it: "Burstable", "BestEffort", or "Guaranteed"
 * when the pod's cgroup sits directly under kubepods; "" where the path
 * does not show its parent.
 *
 * The unit: for a process in no container, the innermost "NAME.service"
 * component directly under a ".slice" with no ".scope" or ".slice" below
 * it (/system.slice/nginx.service, /system.slice/nginx.service/worker,
 * .../user@1000.service/app.slice/app-foo.service; not
 * .../user@1000.service/apps.slice/vte-spawn-<uuid>.scope, a terminal's
 * scope), a name of letters, digits and ":-_.\@" only.
 */
#ifndef MSTAT_CORE_WHERE_H
#define MSTAT_CORE_WHERE_H

#define MSTAT_CONTAINER_ID_LEN 64
#define MSTAT_CONTAINER_SHORT_LEN 12 /* as docker ps shows it */
#define MSTAT_POD_UID_MAX 36
#define MSTAT_UNIT_NAME_MAX 256      /* systemd's limit, with the NUL */

struct mstat_where {
	char container_id[MSTAT_CONTAINER_ID_LEN + 1];
	char container_short[MSTAT_CONTAINER_SHORT_LEN + 1];
	char pod_uid[MSTAT_POD_UID_MAX + 1];
	char qos_class[16];
	char systemd_unit[MSTAT_UNIT_NAME_MAX];
};

/* Fills `w` from the text of a /proc/<pid>/cgroup file (NUL-terminated;
 * NULL reads as empty). */
void mstat_where_parse(const char *cgroup, struct mstat_where *w);

/* What the WHERE column shows: the short container id, else the unit,
 * else "" (nothing known). */
const char *mstat_where_short(const struct mstat_where *w);

#endif /* MSTAT_CORE_WHERE_H */
