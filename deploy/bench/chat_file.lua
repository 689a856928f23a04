-- wrk script: a non-stream chat completion whose body is read from the file
-- BENCH_BODY_FILE names: a long agent conversation (deploy/bench/bodies.sh
-- writes 200 KB and 1 MB ones, `model` at the end of the object). The
-- upstream answers its static chat.json.
local file = assert(io.open(assert(os.getenv("BENCH_BODY_FILE"), "BENCH_BODY_FILE is not set"), "rb"))
wrk.body = file:read("*a")
file:close()
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-client-side-key"
wrk.headers["x-bench-kind"] = "chat"
