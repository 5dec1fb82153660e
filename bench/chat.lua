-- wrk -t1 -c32 -d5s -s regress/fakelm/chat.lua http://127.0.0.1:PORT/v1/chat/completions
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"fakelm","messages":[{"role":"user","content":"Say hello"}],"max_tokens":16}'
