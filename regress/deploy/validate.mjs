// Copyright (c) 2026 The agency authors
// SPDX-License-Identifier: ISC (see the file LICENSE)
//
// node validate.mjs DIR OUT: build the kustomization in DIR as kustomize
// would for what deploy/kubernetes uses (resources, files or
// directories; namespace; JSON patches of RFC 6902 with a target), then
// validate every object against Kubernetes' own schemas with the
// kubernetes-models package, offline.  Writes the objects to OUT as a
// JSON array (for the test's own checks) and prints one line an object.
// Any other kustomization field is an error: nothing is ignored.
// Exits 1 on the first invalid object, with the schema's message.

import { readFileSync, writeFileSync, statSync } from "node:fs";
import { join, dirname } from "node:path";
import { parseAllDocuments, parse } from "yaml";

const KNOWN = new Set(["apiVersion", "kind", "namespace", "resources",
    "patches"]);
// Kinds that have no namespace (of those a deployment here may use).
const CLUSTER = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding",
    "PersistentVolume", "StorageClass", "RuntimeClass"]);

function fail(msg) {
	console.error(`validate: ${msg}`);
	process.exit(1);
}

function docs(file) {
	const out = [];
	for (const d of parseAllDocuments(readFileSync(file, "utf8"))) {
		if (d.errors.length > 0)
			fail(`${file}: ${d.errors[0].message}`);
		const o = d.toJS();
		if (o !== null)
			out.push({ file, obj: o });
	}
	return out;
}

// An RFC 6902 pointer's parent and last key.
function locate(obj, path) {
	const parts = path.split("/").slice(1).map((p) =>
	    p.replace(/~1/g, "/").replace(/~0/g, "~"));
	const last = parts.pop();
	let cur = obj;
	for (const p of parts) {
		if (cur === null || typeof cur !== "object" || !(p in cur))
			return null;
		cur = cur[p];
	}
	return { parent: cur, key: Array.isArray(cur) && last === "-" ?
	    cur.length : last };
}

function patch(obj, ops, where) {
	for (const op of ops) {
		const l = locate(obj, op.path);
		if (l === null)
			fail(`${where}: no parent for ${op.path}`);
		switch (op.op) {
		case "add":
			if (Array.isArray(l.parent))
				l.parent.splice(Number(l.key), 0, op.value);
			else
				l.parent[l.key] = op.value;
			break;
		case "replace":
			if (!(l.key in l.parent))
				fail(`${where}: nothing to replace at ${op.path}`);
			l.parent[l.key] = op.value;
			break;
		case "remove":
			if (!(l.key in l.parent))
				fail(`${where}: nothing to remove at ${op.path}`);
			if (Array.isArray(l.parent))
				l.parent.splice(Number(l.key), 1);
			else
				delete l.parent[l.key];
			break;
		default:
			fail(`${where}: op ${op.op} is not supported here`);
		}
	}
}

function matches(obj, t) {
	const [group, version] = obj.apiVersion.includes("/") ?
	    obj.apiVersion.split("/") : ["", obj.apiVersion];
	return (t.kind === undefined || t.kind === obj.kind) &&
	    (t.name === undefined || t.name === obj.metadata?.name) &&
	    (t.group === undefined || t.group === group) &&
	    (t.version === undefined || t.version === version);
}

function build(dir) {
	const kfile = join(dir, "kustomization.yaml");
	const k = parse(readFileSync(kfile, "utf8"));
	for (const f of Object.keys(k))
		if (!KNOWN.has(f))
			fail(`${kfile}: field ${f} is not supported here`);
	let objs = [];
	for (const r of k.resources ?? []) {
		const p = join(dir, r);
		objs = objs.concat(statSync(p).isDirectory() ? build(p) : docs(p));
	}
	for (const pt of k.patches ?? []) {
		if (pt.path === undefined || pt.target === undefined)
			fail(`${kfile}: a patch needs a path and a target`);
		const ops = parse(readFileSync(join(dir, pt.path), "utf8"));
		if (!Array.isArray(ops))
			fail(`${join(dir, pt.path)}: not a JSON patch (a list of operations)`);
		const hit = objs.filter((o) => matches(o.obj, pt.target));
		if (hit.length === 0)
			fail(`${kfile}: the patch ${pt.path} matches no object`);
		for (const o of hit)
			patch(o.obj, ops, join(dir, pt.path));
	}
	if (k.namespace !== undefined)
		for (const o of objs)
			if (!CLUSTER.has(o.obj.kind))
				o.obj.metadata.namespace = k.namespace;
	return objs;
}

const [dir, out] = process.argv.slice(2);
if (dir === undefined || out === undefined)
	fail("usage: node validate.mjs DIR OUT");
const objs = build(dir);
if (objs.length === 0)
	fail(`${dir}: no objects`);
for (const { file, obj } of objs) {
	const where = `${file}: ${obj.kind} ${obj.metadata?.name}`;
	if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string")
		fail(`${file}: an object without apiVersion or kind`);
	const mod = `kubernetes-models/${obj.apiVersion}`;
	let cls;
	try {
		cls = (await import(mod))[obj.kind];
	} catch (e) {
		fail(`${where}: no schema (${mod}): ${e.message}`);
	}
	if (cls === undefined)
		fail(`${where}: ${obj.apiVersion} has no kind ${obj.kind}`);
	try {
		new cls(obj).validate();
	} catch (e) {
		fail(`${where}: ${e.message}`);
	}
	console.log(`valid: ${obj.apiVersion} ${obj.kind} ${obj.metadata.namespace ?? "-"}/${obj.metadata.name}`);
}
writeFileSync(out, JSON.stringify(objs.map((o) => o.obj), null, 1));
