-- wrk script: a non-stream chat completion, as an OpenAI SDK sends it.
-- The upstream answers its static chat.json (x-bench-kind picks the file:
-- nginx's static server cannot read the body).
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-client-side-key"
wrk.headers["x-bench-kind"] = "chat"
wrk.body = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}]}'
