-- Copyright (c) 2026 The agency authors
-- SPDX-License-Identifier: ISC (see the file LICENSE)
-- wrk -t1 -c32 -d5s -s bench/chat.lua http://127.0.0.1:PORT/v1/chat/completions
-- BENCH_BODY overrides the body (bench/run passes its 285-byte request).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("BENCH_BODY") or
    '{"model":"fakelm","messages":[{"role":"user","content":"Say hello"}],"max_tokens":16}'
