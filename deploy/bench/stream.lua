-- wrk script: a streamed chat completion; the upstream answers its static
-- 200-event stream.sse (x-bench-kind picks the file). wrk counts one request
-- per complete stream.
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "text/event-stream"
wrk.headers["Authorization"] = "Bearer sk-client-side-key"
wrk.headers["x-bench-kind"] = "stream"
wrk.body = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}],"stream":true}'
