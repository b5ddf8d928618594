/* SPDX-License-Identifier: MIT */
/*
 * test_where.c - where a process runs, from /proc/<pid>/cgroup texts
 * (core/where.c): the container id, the pod uid and QoS class, the
 * systemd unit, on cgroup v1 and v2 and relative to a cgroup namespace.
 *
 * The lines come from the runtimes and from other parsers' fixtures:
 * elastic/apm tests/agents/json-specs/cgroup_parsing.json, the Elastic
 * agents' Kubernetes lines, grafana/alloy's discovery.process tests,
 * DataDog's dd-trace-go, cAdvisor's crio and containerd factories, the
 * OpenTelemetry semantic conventions' example; and what podman 4.3 and
 * unshare(1) with a cgroup of its own gave on a cgroup v1 machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/where.h"

struct fixture {
	const char *cgroup;
	const char *container_id, *pod_uid, *qos_class, *systemd_unit;
};

#define ID_CRIO "2227daf62df6694645fee5df53c1f91271546a9560e8600a525690ae252b7f63"
#define ID_DOCKER_OS "b15a5bdedd2e7645c3be271364324321b908314e4c77857bbfd32a041148c07f"
#define ID_K8S_FS "244a65edefdffe31685c42317c9054e71dc1193048cf9459e2a4dd35cbc1dba4"
#define ID_GUAR "7fe41c8a2d1da09420117894f11dd91f6c3a44dfeb7d125dc594bd53468861df"
#define ID_CRI "a534eb629135e43beb13213976e37bb2ab95cba4c0d1d0b4e27c6bc4d8091b83"
#define ID_CRIO2 "0ecc7949cbaf17e883264ea1055f60b184a7cb264fd759c4a692e1155086fe2d"
#define ID_REL "656959d9ee87a0b131c601ce9d9f8f76b1dda60e8608c503b5979d849cbdc714"
#define ID_CTRD "47e320f795efcec1ecf2001c3a09c95e3701ed87de8256837b70b10e23818251"
#define ID_V1FORM "1753b7cbbf62734d812936961224d5bc0cf8f45214e0d5cdd1a781a053e7c48f"
#define ID_DOCKER "18c8e093ee0e02ce1ecee4e99590675594c72c4c8b59a7619bc79fc64ddc2fd9"
#define ID_SYSTEMD "cde7c2bab394630a42d73dc610b9c57415dced996106665d427f6d0566594411"
#define ID_PODMAN "6f0a3b24e1c5d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4"

static const struct fixture fixtures[] = {
	/* cri-o, systemd driver, burstable (elastic: testUnderscores) */
	{ "1:name=systemd:/kubepods.slice/kubepods-burstable.slice/"
	  "kubepods-burstable-pod90d81341_92de_11e7_8cf2_507b9d4141fa.slice/"
	  "crio-" ID_CRIO ".scope",
	  ID_CRIO, "90d81341-92de-11e7-8cf2-507b9d4141fa", "Burstable", "" },
	/* docker, systemd driver, Guaranteed (elastic: testOpenshiftForm) */
	{ "9:freezer:/kubepods.slice/"
	  "kubepods-pod22949dce_fd8b_11ea_8ede_98f2b32c645c.slice/docker-"
	  ID_DOCKER_OS ".scope",
	  ID_DOCKER_OS, "22949dce-fd8b-11ea-8ede-98f2b32c645c", "Guaranteed", "" },
	/* a desktop's terminal: no container, no unit (elastic) */
	{ "1:name=systemd:/user.slice/user-1000.slice/user@1000.service/"
	  "apps.slice/apps-org.gnome.Terminal.slice/"
	  "vte-spawn-75bc72bd-6642-4cf5-b62c-0674e11bfc84.scope",
	  "", "", "", "" },
	/* ECS Fargate's id is not a container id here (elastic) */
	{ "1:name=systemd:/ecs/03752a671e744971a862edcee6195646/"
	  "03752a671e744971a862edcee6195646-4015103728",
	  "", "", "", "" },
	/* Kubernetes, cgroupfs driver, kubepods twice (Elastic agents) */
	{ "12:pids:/kubepods/kubepods/besteffort/"
	  "pod0e886e9a-3879-45f9-b44d-86ef9df03224/" ID_K8S_FS,
	  ID_K8S_FS, "0e886e9a-3879-45f9-b44d-86ef9df03224", "BestEffort", "" },
	/* Guaranteed, cgroupfs driver */
	{ "10:cpuset:/kubepods/pod5eadac96-ab58-11ea-b82b-0242ac110009/" ID_GUAR,
	  ID_GUAR, "5eadac96-ab58-11ea-b82b-0242ac110009", "Guaranteed", "" },
	/* a UUID as the container: the pod alone */
	{ "1:name=systemd:/kubepods/besteffort/"
	  "pode9b90526-f47d-11e8-b2a5-080027b9f4fb/"
	  "15aa6e53-b09a-40c7-8558-c6c31e36c88a",
	  "", "e9b90526-f47d-11e8-b2a5-080027b9f4fb", "BestEffort", "" },
	/* containerd CRI, systemd driver, v1 (alloy's container id) */
	{ "12:cpuset:/kubepods.slice/kubepods-burstable.slice/"
	  "kubepods-burstable-pod7d94be4b_6fb6_4e0b_8b1c_4f17bd9e3d97.slice/"
	  "cri-containerd-" ID_CRI ".scope",
	  ID_CRI, "7d94be4b-6fb6-4e0b-8b1c-4f17bd9e3d97", "Burstable", "" },
	/* cri-o on cgroup v2 (alloy) */
	{ "0::/kubepods.slice/kubepods-burstable.slice/"
	  "kubepods-burstable-podb57320a0_e7eb_4ac8_a791_4c4472796867.slice/"
	  "crio-" ID_CRIO2 ".scope",
	  ID_CRIO2, "b57320a0-e7eb-4ac8-a791-4c4472796867", "Burstable", "" },
	/* relative to the reader's cgroup namespace (alloy) */
	{ "0::/../../kubepods-besteffort-pod88f6f4e3_59c0_4ce8_9ecf_391c8b5a60ad"
	  ".slice/docker-" ID_REL ".scope",
	  ID_REL, "88f6f4e3-59c0-4ce8-9ecf-391c8b5a60ad", "BestEffort", "" },
	{ "0::/../../pod2c48913c-b29f-11e7-9350-020968147796/" ID_REL,
	  ID_REL, "2c48913c-b29f-11e7-9350-020968147796", "", "" },
	{ "0::/../../user.slice/user-501.slice/session-3.scope", "", "", "", "" },
	/* containerd on cgroup v2 */
	{ "0::/kubepods.slice/kubepods-burstable.slice/"
	  "kubepods-burstable-podf9a04ecc_1875_491b_926c_d2f64757704e.slice/"
	  "cri-containerd-" ID_CTRD ".scope",
	  ID_CTRD, "f9a04ecc-1875-491b-926c-d2f64757704e", "Burstable", "" },
	/* containerd's "slice:runtime:id" form under containerd.service */
	{ "12:cpu,cpuacct:/system.slice/containerd.service/"
	  "kubepods-besteffort-podb41662f7_b03a_4c65_8ef9_6e4e55c3cf27.slice"
	  ":cri-containerd:" ID_V1FORM,
	  ID_V1FORM, "b41662f7-b03a-4c65-8ef9-6e4e55c3cf27", "BestEffort", "" },
	/* docker, cgroupfs driver (alloy, dd-trace-go) */
	{ "4:pids:/docker/" ID_DOCKER, ID_DOCKER, "", "", "" },
	/* docker, systemd driver */
	{ "1:name=systemd:/system.slice/docker-" ID_SYSTEMD ".scope",
	  ID_SYSTEMD, "", "", "" },
	/* a systemd service on cgroup v2 */
	{ "0::/system.slice/docker.service", "", "", "", "docker.service" },
	{ "0::/system.slice/nginx.service", "", "", "", "nginx.service" },
	/* a user's service, and a template's instance */
	{ "0::/user.slice/user-1000.slice/user@1000.service/app.slice/"
	  "app-foo.service",
	  "", "", "", "app-foo.service" },
	{ "0::/system.slice/system-getty.slice/getty@tty1.service", "", "", "",
	  "getty@tty1.service" },
	/* a service's own sub-cgroups (Delegate=yes) */
	{ "0::/system.slice/slurmstepd.scope/job_1446354/step_batch/user/task_0",
	  "", "", "", "" },
	{ "0::/system.slice/foo.service/worker", "", "", "", "foo.service" },
	/* podman's monitor, and a mount unit: not containers (cAdvisor) */
	{ "0::/machine.slice/libpod-conmon-" ID_PODMAN ".scope", "", "", "", "" },
	{ "1:name=systemd:/kubepods/pod1/crio-conmon-" ID_CRIO, "", "", "", "" },
	{ "0::/system.slice/run-containerd-io.containerd.runtime.v1.linux-k8s.io-"
	  ID_CTRD "-rootfs.mount",
	  "", "", "", "" },
	/* podman, systemd manager */
	{ "0::/machine.slice/libpod-" ID_PODMAN ".scope", ID_PODMAN, "", "", "" },
	/* a container's own sub-cgroup */
	{ "0::/machine.slice/libpod-" ID_PODMAN ".scope/container", ID_PODMAN, "",
	  "", "" },
	/* short ids are not taken */
	{ "0::/docker/ac679f8a8319c8cf7d38e1adf263bc08d23", "", "", "", "" },
	/* a process at the root, and nothing at all */
	{ "0::/", "", "", "", "" },
	{ "", "", "", "", "" },
	/* garbage */
	{ "no colons here\n::\n7:\n", "", "", "", "" },
	{ "0::/system.slice/evil\x1b[2J.service", "", "", "", "" },
};

/* A whole cgroup v1 file of podman 4.3 with the cgroupfs manager, as on
 * this project's machines: every controller names the container, the
 * v2 line too. */
static const char podman_v1[] =
	"13:misc:/\n"
	"12:rdma:/\n"
	"11:hugetlb:/libpod_parent/libpod-" ID_PODMAN "\n"
	"10:net_cls,net_prio:/libpod_parent/libpod-" ID_PODMAN "\n"
	"9:perf_event:/libpod_parent/libpod-" ID_PODMAN "\n"
	"8:pids:/libpod_parent/libpod-" ID_PODMAN "\n"
	"7:freezer:/libpod_parent/libpod-" ID_PODMAN "\n"
	"6:devices:/libpod_parent/libpod-" ID_PODMAN "\n"
	"5:cpuset:/libpod_parent/libpod-" ID_PODMAN "\n"
	"4:memory:/libpod_parent/libpod-" ID_PODMAN "\n"
	"3:blkio:/libpod_parent/libpod-" ID_PODMAN "\n"
	"2:cpu,cpuacct:/libpod_parent/libpod-" ID_PODMAN "\n"
	"1:name=systemd:/libpod_parent/libpod-" ID_PODMAN "\n"
	"0::/libpod_parent/libpod-" ID_PODMAN "\n";

/* conmon itself, beside it */
static const char conmon_v1[] =
	"8:pids:/libpod_parent/conmon\n"
	"1:name=systemd:/libpod_parent/conmon\n"
	"0::/libpod_parent/conmon\n";

/* docker's v1 file of a host with systemd: the container on every line,
 * docker.service on the v2 line (Elastic's agents). */
static const char docker_v1[] =
	"12:devices:/docker/" ID_DOCKER "\n"
	"11:hugetlb:/docker/" ID_DOCKER "\n"
	"4:memory:/docker/" ID_DOCKER "\n"
	"1:name=systemd:/docker/" ID_DOCKER "\n"
	"0::/system.slice/docker.service\n";

/* A service on a hybrid machine: the unit on name=systemd's line, the
 * controllers at the root. */
static const char service_v1[] =
	"4:memory:/\n"
	"1:name=systemd:/system.slice/cron.service\n"
	"0::/\n";

static void
expect(const char *cgroup, const char *id, const char *pod, const char *qos,
       const char *unit)
{
	struct mstat_where w;

	mstat_where_parse(cgroup, &w);
	if (strcmp(w.container_id, id) || strcmp(w.pod_uid, pod) ||
	    strcmp(w.qos_class, qos) || strcmp(w.systemd_unit, unit))
		fail_msg("%s\n  got id '%s' pod '%s' qos '%s' unit '%s'\n"
			 "  want id '%s' pod '%s' qos '%s' unit '%s'",
			 cgroup, w.container_id, w.pod_uid, w.qos_class,
			 w.systemd_unit, id, pod, qos, unit);
	assert_int_equal(strlen(w.container_short), id[0] ? 12 : 0);
	assert_true(strncmp(w.container_short, id, strlen(w.container_short)) == 0);
}

static void
test_fixtures(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		const struct fixture *f = &fixtures[i];
		expect(f->cgroup, f->container_id, f->pod_uid, f->qos_class,
		       f->systemd_unit);
	}
}

static void
test_files(void **state)
{
	struct mstat_where w;

	(void)state;
	expect(podman_v1, ID_PODMAN, "", "", "");
	expect(conmon_v1, "", "", "", "");
	expect(docker_v1, ID_DOCKER, "", "", "");
	expect(service_v1, "", "", "", "cron.service");
	/* The column's text: the short id, else the unit. */
	mstat_where_parse(podman_v1, &w);
	assert_string_equal(mstat_where_short(&w), "6f0a3b24e1c5");
	mstat_where_parse(service_v1, &w);
	assert_string_equal(mstat_where_short(&w), "cron.service");
	mstat_where_parse(NULL, &w);
	assert_string_equal(mstat_where_short(&w), "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
