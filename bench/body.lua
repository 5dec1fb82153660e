-- Copyright (c) 2026 The agency authors
-- SPDX-License-Identifier: ISC (see the file LICENSE)
-- wrk -t1 -c8 -d5s -s bench/body.lua http://127.0.0.1:PORT/v1/chat/completions
-- POSTs the bytes of the file BENCH_BODY_FILE (bench/large.sh writes
-- them: bodies of 100 KB and 1 MB do not fit in the environment).
local f = assert(io.open(assert(os.getenv("BENCH_BODY_FILE"),
    "BENCH_BODY_FILE is not set"), "rb"))
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = f:read("*a")
f:close()
