#!/usr/bin/env python3
# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
"""count.py OUT: the calls of one request, from OUT/trace.req (records
of trace.c) and OUT/agency-proxy (its symbols, through addr2line).

Bottom files (buffers, HTTP/1 parsing, the clock, logging, the route
and key-slot tables, common/) are left out: a call into them is not a
step of the request.  Two counts of re-entries, a call from one file
into another file the request had already entered (an event callback
counts as a call from outside):
  fine    every such call;
  coarse  only calls that go on into a third file before returning: a
          question asked of a file (access_owner, rules_cap,
          parent_send) does not take the request there."""
import os, struct, subprocess, sys
from collections import OrderedDict

out = sys.argv[1]
BOTTOM = {'buf.c', 'h1.c', 'utf8.c', 'state.c', 'sse.c', 'multipart.c',
          'privsep.c', 'sandbox.c', 'log.c', 'routes.c', 'keyq.c'}
data = open(os.path.join(out, 'trace.req'), 'rb').read()
recs = [(chr(data[i]), struct.unpack('<Q', data[i+1:i+9])[0])
        for i in range(0, len(data) - 8, 9)]
addrs = sorted({a for _, a in recs})
p = subprocess.run(['addr2line', '-f', '-e', os.path.join(out, 'agency-proxy')]
                   + ['%x' % a for a in addrs], capture_output=True, text=True)
lines = p.stdout.split('\n')
sym = {}
for i, a in enumerate(addrs):
    fn, loc = lines[2*i], lines[2*i+1]
    path = loc.split(':')[0]
    d = os.path.basename(os.path.dirname(path))
    f = os.path.basename(path)
    if d == 'common':
        f = 'common/' + f
    sym[a] = (fn, f)

def counted(f):
    return not (f in BOTTOM or f.startswith('common/') or f == '??')

stack = []          # files of the frames (counted files only tracked)
visited = OrderedDict()
seq = []
reentries = []
cur = None          # the counted file control is in
calls = 0
for kind, a in recs:
    fn, f = sym[a]
    if kind == '>':
        calls += 1
        caller = stack[-1] if stack else None
        stack.append((fn, f))
        if not counted(f):
            continue
        # the counted file of the innermost counted frame below us
        below = None
        for sf, ff in reversed(stack[:-1]):
            if counted(ff):
                below = (sf, ff); break
        if below is not None and below[1] == f:
            continue
        if not seq or seq[-1] != f:
            seq.append(f)
        if f in visited and below is not None:
            reentries.append('%s:%s -> %s:%s' % (below[1], below[0], f, fn))
        elif f in visited and below is None:
            reentries.append('(event) -> %s:%s' % (f, fn))
        visited[f] = True
    else:
        if stack:
            stack.pop()
print('calls traced: %d' % calls)
print('files entered (%d): %s' % (len(visited), ' '.join(visited)))
print('sequence (%d steps): %s' % (len(seq), ' > '.join(seq)))
print('re-entries: %d' % len(reentries))
for r in reentries:
    print('  ' + r)

# The coarse count: a call into a file that enters no other counted file
# before it returns (a question asked of that file: access_owner,
# rules_cap, parent_send) does not take the request there; drop those
# and count the re-entries of what is left.
nodes = []   # [file, fn, parent, foreign]
st = []
for kind, a in recs:
    fn, f = sym[a]
    if kind == '>':
        par = next((x for x in reversed(st) if x is not None), -1)
        if counted(f):
            nodes.append([f, fn, par, False])
            idx = len(nodes) - 1
            p = par
            while p != -1:
                if nodes[p][0] != f:
                    nodes[p][3] = True
                p = nodes[p][2]
            st.append(idx)
        else:
            st.append(None)
    elif st:
        st.pop()
kept = [i for i, n in enumerate(nodes) if n[3]]
keptset = set(kept)
seen = set()
creent = []
for i in kept:
    f, fn, par, _ = nodes[i]
    p = par
    while p != -1 and p not in keptset:
        p = nodes[p][2]
    pf = nodes[p][0] if p != -1 else None
    if pf == f:
        continue
    if f in seen:
        creent.append('%s -> %s:%s' % ('%s:%s' % (pf, nodes[p][1]) if p != -1 else '(event)', f, fn))
    seen.add(f)
print('coarse: files %d, re-entries %d' % (len(seen), len(creent)))
for r in creent:
    print('  ' + r)
