# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
# reader.py FIFO OUT MARK: copy the trace records read from FIFO to OUT
# while the file MARK exists, whole records only (9 bytes each).
import os, sys
fifo, out, mark = sys.argv[1:4]
f = open(fifo, 'rb', buffering=0)
o = open(out, 'wb')
pos = 0
while True:
    d = f.read(65536)
    if not d:
        break
    if os.path.exists(mark):
        skip = (-pos) % 9      # start at a record's first byte
        o.write(d[skip:] if o.tell() == 0 else d)
    elif o.tell() % 9:
        o.write(d[:9 - o.tell() % 9])
    pos += len(d)
o.close()
