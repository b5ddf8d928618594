#!/usr/bin/env node
// SPDX-License-Identifier: MIT
/*
 * kubernetes.js - the manifests of deploy/kubernetes, checked offline.
 *
 *   node kubernetes.js ROOT
 *
 * Every object of every YAML file there is:
 *   1. valid against its kind's schema, from the Kubernetes 1.27 OpenAPI
 *      specification, as the npm package kubernetes-models compiles it
 *      (types, enums, required fields);
 *   2. free of fields that schema does not define.  The package's
 *      validators do not look for them (its schemas leave
 *      additionalProperties open), so they are found here, with the same
 *      validators: each reads, by name, every property its schema
 *      defines, and enumerates the keys of a map.  The object is handed
 *      to them behind a Proxy that notes what they read: in an object
 *      whose properties were read by name and whose keys were never
 *      enumerated, a key never read is no field of the API ("hostPid");
 *   3. what docs/deploy.md promises of it (daemonsetPromises,
 *      sharedShmPromises, prometheusRulePromises below).
 * A PrometheusRule is checked against the Prometheus Operator's schema
 * for it, as the npm package @kubernetes-models/prometheus-operator
 * compiles it, the same two ways.
 * Then each case of broken.yaml, one of those manifests with one change,
 * must fail, with the message the case names.
 *
 * The packages come from ROOT/.deps/node (scripts/deps.sh installs them
 * there, as tests/deploy/package-lock.json pins them), or from
 * MSTAT_NODE_MODULES.
 */
"use strict";

const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

const root = process.argv[2] && path.resolve(process.argv[2]);
if (!root) {
  console.log("usage: node kubernetes.js ROOT");
  process.exit(2);
}
const modules = path.resolve(process.env.MSTAT_NODE_MODULES ||
  path.join(root, ".deps", "node", "node_modules"));
for (const pkg of ["kubernetes-models", "@kubernetes-models/prometheus-operator"])
  if (!fs.existsSync(path.join(modules, pkg))) {
    console.log(`FAIL: no ${pkg} in ${modules} ` +
                "(bash scripts/deps.sh installs it)");
    process.exit(1);
  }
const requireDep = createRequire(path.join(modules, "..", "package.json"));
const yaml = requireDep("js-yaml");
const manifests = path.join(root, "deploy", "kubernetes");

/* The packages of the API groups that are not Kubernetes's own. */
const GROUPS = {
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator",
};

/* The model class of an object's kind: kubernetes-models/<group/version>,
 * or its group's package of GROUPS. */
function modelOf(obj) {
  const { apiVersion, kind } = obj;
  if (typeof apiVersion !== "string" || typeof kind !== "string")
    throw new Error("no apiVersion and kind");
  const pkg = GROUPS[apiVersion.split("/")[0]] || "kubernetes-models";
  let mod;
  try {
    mod = requireDep(`${pkg}/${apiVersion}`);
  } catch (e) {
    throw new Error(`no schema for apiVersion ${apiVersion}`);
  }
  if (typeof mod[kind] !== "function")
    throw new Error(`no schema for kind ${kind} of ${apiVersion}`);
  return mod[kind];
}

/*
 * The fields of `obj` its kind's schema does not define, as JSON
 * pointers, found as the comment at the top says.  Validation errors
 * are thrown as the package words them.
 */
function unknownFields(Model, obj) {
  const proxies = new WeakMap();
  const seen = []; // [target, {where, named, open}]

  function wrap(value, where) {
    if (value === null || typeof value !== "object")
      return value;
    if (proxies.has(value))
      return proxies.get(value);
    const note = { where, named: new Set(), open: false };
    seen.push([value, note]);
    const p = new Proxy(value, {
      get(t, key, receiver) {
        const v = Reflect.get(t, key, receiver);
        if (typeof key !== "string")
          return v;
        note.named.add(key);
        return Object.prototype.hasOwnProperty.call(t, key)
          ? wrap(v, `${where}/${key}`) : v;
      },
      has(t, key) {
        if (typeof key === "string")
          note.named.add(key);
        return Reflect.has(t, key);
      },
      ownKeys(t) {
        note.open = true;
        return Reflect.ownKeys(t);
      },
    });
    proxies.set(value, p);
    return p;
  }
  // The method validates `this`: the object behind its Proxy.
  Model.prototype.validate.call(wrap(obj, ""));
  const unknown = [];
  for (const [t, note] of seen) {
    if (Array.isArray(t) || note.open || note.named.size === 0)
      continue; // a list, a map, or an object the schema leaves free
    for (const key of Object.keys(t))
      if (!note.named.has(key))
        unknown.push(`${note.where}/${key}`);
  }
  return unknown;
}

/* Steps 1 and 2 for one object: a list of what is wrong. */
function checkSchema(obj) {
  let Model;
  try {
    Model = modelOf(obj);
  } catch (e) {
    return [e.message];
  }
  try {
    new Model(obj).validate();
  } catch (e) {
    return [`not valid: ${e.message}`];
  }
  const schema = obj.apiVersion.split("/")[0] in GROUPS
    ? GROUPS[obj.apiVersion.split("/")[0]] : "Kubernetes 1.27";
  return unknownFields(Model, obj).map(
    (p) => `${p.slice(1)}: not a field of ${obj.kind} (${schema})`);
}

/* ---- what docs/deploy.md promises ---- */

const HEALTH = "/-/healthy";
const PORT = 10415;

function get(obj, ...keys) {
  for (const k of keys) {
    if (obj === null || typeof obj !== "object")
      return undefined;
    obj = obj[k];
  }
  return obj;
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/* Collects what fails, each with where. */
class Promises {
  constructor() {
    this.failed = [];
  }
  expect(cond, what) {
    if (!cond)
      this.failed.push(what);
    return cond;
  }
}

/* A container's port for Prometheus, its probes, and its resources. */
function exporterContainer(p, c, where) {
  const args = c.args || [];
  p.expect(args.includes(`--web.listen-address=:${PORT}`),
           `${where}: args without --web.listen-address=:${PORT} ` +
           "(the exporter listens on loopback by default)");
  const ports = (c.ports || []).filter((x) => x.containerPort === PORT);
  p.expect(ports.length === 1 && ports[0].name === "metrics" &&
           (ports[0].protocol || "TCP") === "TCP",
           `${where}: no TCP port ${PORT} named metrics`);
  for (const probe of ["livenessProbe", "readinessProbe"]) {
    const h = get(c, probe, "httpGet");
    p.expect(h && h.path === HEALTH && (h.port === "metrics" || h.port === PORT),
             `${where}: ${probe} is not an httpGet of ${HEALTH} on the ` +
             "metrics port");
  }
  resourcesSet(p, c, where);
}

const QUANTITY = /^([0-9.]+)(m|Ki|Mi|Gi)?$/;
const SCALE = { m: 1e-3, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };

function quantity(q) {
  const m = QUANTITY.exec(String(q));
  return m ? parseFloat(m[1]) * (m[2] ? SCALE[m[2]] : 1) : NaN;
}

/* Requests and limits of CPU and memory, each request within its limit. */
function resourcesSet(p, c, where) {
  for (const r of ["cpu", "memory"]) {
    const req = quantity(get(c, "resources", "requests", r));
    const lim = quantity(get(c, "resources", "limits", r));
    p.expect(req > 0 && lim > 0 && req <= lim,
             `${where}: resources.requests.${r} and limits.${r} must be ` +
             "set, the request within the limit");
  }
}

/* A container's effective securityContext field, the pod's if unset. */
function effective(pod, c, key) {
  const v = get(c, "securityContext", key);
  return v !== undefined ? v : get(pod, "securityContext", key);
}

function daemonsetPromises(objs) {
  const p = new Promises();
  const ns = objs.find((o) => o.kind === "Namespace");
  const sa = objs.find((o) => o.kind === "ServiceAccount");
  const ds = objs.find((o) => o.kind === "DaemonSet");
  if (!p.expect(ns && sa && ds, "a Namespace, a ServiceAccount and a DaemonSet"))
    return p.failed;
  p.expect(get(ns, "metadata", "labels", "pod-security.kubernetes.io/enforce")
           === "privileged",
           "Namespace: pod-security.kubernetes.io/enforce is not privileged");
  const name = get(ns, "metadata", "name");
  p.expect(get(sa, "metadata", "namespace") === name &&
           get(ds, "metadata", "namespace") === name,
           "the ServiceAccount and the DaemonSet are not in the Namespace");
  p.expect(sa.automountServiceAccountToken === false,
           "ServiceAccount: automountServiceAccountToken is not false");
  const pod = get(ds, "spec", "template", "spec") || {};
  const w = "DaemonSet";
  p.expect(pod.serviceAccountName === get(sa, "metadata", "name"),
           `${w}: serviceAccountName is not the ServiceAccount`);
  p.expect(pod.automountServiceAccountToken === false,
           `${w}: automountServiceAccountToken is not false`);
  p.expect(pod.hostPID === true, `${w}: hostPID is not true`);
  p.expect(!pod.hostNetwork && !pod.hostIPC,
           `${w}: hostNetwork or hostIPC`);
  p.expect(!(pod.volumes || []).some((v) => v.hostPath),
           `${w}: a hostPath volume`);
  p.expect((pod.tolerations || []).some((t) => t.operator === "Exists" &&
                                          !t.key && !t.effect),
           `${w}: no toleration of every taint (operator: Exists alone)`);
  const ann = get(ds, "spec", "template", "metadata", "annotations") || {};
  p.expect(ann["prometheus.io/scrape"] === "true" &&
           ann["prometheus.io/port"] === String(PORT) &&
           ann["prometheus.io/path"] === "/metrics",
           `${w}: prometheus.io/scrape, port and path annotations`);
  const cs = pod.containers || [];
  if (!p.expect(cs.length === 1 && !pod.initContainers,
                `${w}: one container, no init container`))
    return p.failed;
  const c = cs[0];
  const cw = `${w}: container ${c.name}`;
  const sc = c.securityContext || {};
  p.expect(sc.runAsUser === 0 && sc.runAsNonRoot === false,
           `${cw}: runAsUser is not 0 with runAsNonRoot false`);
  p.expect(sc.privileged === false, `${cw}: privileged is not false`);
  p.expect(sc.allowPrivilegeEscalation === false,
           `${cw}: allowPrivilegeEscalation is not false`);
  p.expect(sc.readOnlyRootFilesystem === true,
           `${cw}: readOnlyRootFilesystem is not true`);
  p.expect(same(get(sc, "capabilities", "drop"), ["ALL"]),
           `${cw}: capabilities.drop is not [ALL]`);
  const add = [...(get(sc, "capabilities", "add") || [])].sort();
  p.expect(same(add, ["DAC_OVERRIDE", "SYS_PTRACE"]),
           `${cw}: capabilities.add is ${JSON.stringify(add)}, not exactly ` +
           "SYS_PTRACE and DAC_OVERRIDE");
  p.expect(get(effective(pod, c, "seccompProfile"), "type") === "RuntimeDefault",
           `${cw}: seccompProfile is not RuntimeDefault`);
  exporterContainer(p, c, cw);
  return p.failed;
}

/* The Pod Security Standard "restricted" level's rules, as far as this
 * pod's fields go (kubernetes.io/docs/concepts/security/pod-security-
 * standards). */
const RESTRICTED_VOLUMES = ["configMap", "csi", "downwardAPI", "emptyDir",
  "ephemeral", "persistentVolumeClaim", "projected", "secret"];

function sharedShmPromises(objs) {
  const p = new Promises();
  if (!p.expect(objs.length === 1 && objs[0].kind === "Pod", "one Pod"))
    return p.failed;
  const pod = objs[0].spec || {};
  const w = "Pod";
  p.expect(!pod.hostPID && !pod.hostIPC && !pod.hostNetwork,
           `${w}: hostPID, hostIPC or hostNetwork`);
  p.expect((pod.volumes || []).every(
    (v) => Object.keys(v).some((k) => RESTRICTED_VOLUMES.includes(k))),
           `${w}: a volume the restricted level forbids`);
  const shm = (pod.volumes || []).filter((v) =>
    get(v, "emptyDir", "medium") === "Memory");
  if (!p.expect(shm.length === 1 && quantity(shm[0].emptyDir.sizeLimit) > 0,
                `${w}: no emptyDir of medium Memory with a sizeLimit`))
    return p.failed;
  const all = [...(pod.initContainers || []), ...(pod.containers || [])];
  for (const c of all) {
    const cw = `${w}: container ${c.name}`;
    p.expect(get(c, "securityContext", "allowPrivilegeEscalation") === false,
             `${cw}: allowPrivilegeEscalation is not false`);
    p.expect(same(get(c, "securityContext", "capabilities", "drop"), ["ALL"]) &&
             !get(c, "securityContext", "capabilities", "add"),
             `${cw}: capabilities are not drop [ALL], add none`);
    p.expect(get(c, "securityContext", "privileged") !== true,
             `${cw}: privileged`);
    p.expect(effective(pod, c, "runAsNonRoot") === true &&
             effective(pod, c, "runAsUser") !== 0,
             `${cw}: not runAsNonRoot`);
    p.expect(["RuntimeDefault", "Localhost"].includes(
      get(effective(pod, c, "seccompProfile"), "type")),
             `${cw}: seccompProfile is not RuntimeDefault`);
    resourcesSet(p, c, cw);
  }
  const cs = pod.containers || [];
  const sharing = cs.filter((c) => (c.volumeMounts || []).some(
    (m) => m.name === shm[0].name && m.mountPath === "/dev/shm"));
  const exporter = cs.find((c) => c.name === "mstat-exporter");
  const app = cs.find((c) => c.name !== "mstat-exporter");
  if (!p.expect(exporter && app && sharing.length === 2 &&
                sharing.includes(exporter) && sharing.includes(app),
                `${w}: the application and mstat-exporter do not both ` +
                "mount the memory emptyDir at /dev/shm"))
    return p.failed;
  const uid = (c) => effective(pod, c, "runAsUser");
  p.expect(Number.isInteger(uid(app)) && uid(app) === uid(exporter),
           `${w}: the application runs as uid ${uid(app)} and the exporter ` +
           `as ${uid(exporter)}: the segment is 0600 of its owner`);
  const preload = (app.env || []).find((e) => e.name === "LD_PRELOAD");
  p.expect(preload && /libmstatshm\.so/.test(preload.value),
           `${w}: the application does not preload libmstatshm`);
  // The library, and the libunwind it loads to sample (beside itself
  // first: its RUNPATH), copied where the application preloads it from.
  const copied = (pod.initContainers || []).flatMap((c) => {
    const cmd = c.command || [];
    const to = (c.volumeMounts || []).find(
      (m) => cmd[cmd.length - 1] === m.mountPath + "/");
    return cmd[0] === "cp" && to ? cmd.slice(1, -1).map(
      (f) => to.mountPath + "/" + path.basename(f)) : [];
  });
  p.expect(preload && copied.includes(preload.value) &&
           copied.includes(path.dirname(preload.value) + "/libunwind.so.8"),
           `${w}: no init container copies libmstatshm.so.0 and ` +
           `libunwind.so.8 to where the application preloads it from`);
  exporterContainer(p, exporter, `${w}: container mstat-exporter`);
  return p.failed;
}

/* The PrometheusRule: in the agent's namespace, and its groups exactly
 * those of deploy/prometheus/mstat.rules.yml, which Prometheus loads
 * without the Operator (tests/deploy/rules.py tests them). */
function prometheusRulePromises(objs) {
  const p = new Promises();
  const rule = objs.find((o) => o.kind === "PrometheusRule");
  if (!p.expect(rule, "no PrometheusRule"))
    return p.failed;
  const w = `PrometheusRule ${get(rule, "metadata", "name")}`;
  p.expect(get(rule, "metadata", "namespace") === "mstat",
           `${w}: not in namespace mstat`);
  const file = path.join(root, "deploy", "prometheus", "mstat.rules.yml");
  const groups = yaml.load(fs.readFileSync(file, "utf8")).groups;
  p.expect(same(get(rule, "spec", "groups"), groups),
           `${w}: its groups are not those of deploy/prometheus/` +
           "mstat.rules.yml (docs/hacking.md says how to make it again)");
  return p.failed;
}

const PROMISES = {
  "daemonset.yaml": daemonsetPromises,
  "pod-shared-shm.yaml": sharedShmPromises,
  "prometheusrule.yaml": prometheusRulePromises,
};

/* Every check of one file's objects: a list of what fails. */
function checkFile(file, objs) {
  const failed = [];
  objs.forEach((o, i) => {
    if (o === null || typeof o !== "object" || Array.isArray(o)) {
      failed.push(`document ${i + 1}: not an object`);
      return;
    }
    for (const f of checkSchema(o))
      failed.push(`${o.kind} ${get(o, "metadata", "name")}: ${f}`);
  });
  const promises = PROMISES[file];
  if (!promises)
    failed.push("no promises are checked of this file: add them here");
  else if (failed.length === 0)
    failed.push(...promises(objs));
  return failed;
}

function load(file) {
  return yaml.loadAll(fs.readFileSync(path.join(manifests, file), "utf8"));
}

/* ---- broken.yaml: each case a change of one manifest ---- */

/* The parent of a JSON pointer's target, and its last key. */
function pointer(obj, ptr) {
  const keys = ptr.split("/").slice(1).map(
    (k) => k.replace(/~1/g, "/").replace(/~0/g, "~"));
  const last = keys.pop();
  for (const k of keys) {
    if (obj === null || typeof obj !== "object" || !(k in obj))
      throw new Error(`${ptr}: no ${k}`);
    obj = obj[k];
  }
  return [obj, Array.isArray(obj) ? Number(last) : last];
}

function mutate(objs, c) {
  const obj = objs.find((o) => o && o.kind === c.kind);
  if (!obj)
    throw new Error(`no ${c.kind} in ${c.file}`);
  for (const [ptr, v] of Object.entries(c.set || {})) {
    const [parent, k] = pointer(obj, ptr);
    parent[k] = v;
  }
  for (const [ptr, to] of Object.entries(c.rename || {})) {
    const [parent, k] = pointer(obj, ptr);
    if (!(k in parent))
      throw new Error(`${ptr}: nothing to rename`);
    parent[to] = parent[k];
    delete parent[k];
  }
  for (const ptr of c.remove || []) {
    const [parent, k] = pointer(obj, ptr);
    if (!(k in parent))
      throw new Error(`${ptr}: nothing to remove`);
    if (Array.isArray(parent))
      parent.splice(k, 1);
    else
      delete parent[k];
  }
}

let bad = 0;
const files = fs.existsSync(manifests)
  ? fs.readdirSync(manifests).filter((f) => /\.ya?ml$/.test(f)).sort() : [];
for (const f of Object.keys(PROMISES))
  if (!files.includes(f)) {
    console.log(`FAIL deploy/kubernetes/${f}: missing`);
    bad++;
  }
for (const file of files) {
  let failed;
  try {
    const objs = load(file);
    failed = checkFile(file, objs);
    if (failed.length === 0)
      console.log(`ok deploy/kubernetes/${file}: ${objs.map(
        (o) => `${o.kind} ${o.metadata.name}`).join(", ")}`);
  } catch (e) {
    failed = [e.message.split("\n")[0]];
  }
  for (const f of failed)
    console.log(`FAIL deploy/kubernetes/${file}: ${f}`);
  bad += failed.length;
}

const cases = yaml.load(fs.readFileSync(path.join(__dirname, "broken.yaml"),
                                        "utf8"));
for (const c of cases) {
  let failed;
  try {
    const objs = load(c.file);
    mutate(objs, c);
    failed = checkFile(c.file, objs);
  } catch (e) {
    console.log(`FAIL broken case "${c.name}": ${e.message}`);
    bad++;
    continue;
  }
  if (failed.some((f) => f.includes(c.fails))) {
    console.log(`ok broken case "${c.name}": ${failed.find(
      (f) => f.includes(c.fails))}`);
  } else {
    console.log(`FAIL broken case "${c.name}" did not fail with ` +
                `"${c.fails}": ${JSON.stringify(failed)}`);
    bad++;
  }
}
console.log(bad ? `${bad} failed` : "all passed");
process.exit(bad ? 1 : 0);
