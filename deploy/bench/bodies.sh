#!/usr/bin/env bash
# Writes the static upstream's answers into DIR (deploy/bench/run calls it):
#   chat.json        a 672-byte chat.completion with usage, as OpenAI sends it
#   stream.sse       a 200-event chat.completion.chunk stream: a role chunk,
#                    197 answer chunks (~265 bytes each on the wire), a finish_reason chunk and
#                    `data: [DONE]`, every chunk naming the model
#   leak.json        chat.json whose answer quotes KEY (the proxy must refuse it)
#   wrong_model.json chat.json from another model (the proxy must refuse it)
#   request.http     one raw POST request, for idle_conns
#   request_200k.json, request_1m.json
#                    an agent's chat request of exactly 204800 and 1048576
#                    bytes: a long conversation of user and assistant turns,
#                    `model` at the end of the object (the router must read
#                    the whole body to find it)
# Deterministic: the same bytes on every run, so runs compare.
#   deploy/bench/bodies.sh DIR KEY
set -euo pipefail
dir=$1
key=$2
model=gpt-4o-mini-2024-07-18

# The answer text is cut so that the whole body is exactly 672 bytes.
chat_body() {  # model content
    printf '{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"%s","choices":[{"index":0,"message":{"role":"assistant","content":"%s","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":19,"completion_tokens":42,"total_tokens":61,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_06737a9306"}' "$1" "$2"
}
text="Hello! A reverse proxy sits between clients and servers, forwarding each request to the right upstream and relaying the answer back, which lets it retry, check and account for traffic in one place without changing the clients at all."
empty=$(chat_body "$model" "")
chat_body "$model" "${text:0:$((672 - ${#empty}))}" > "$dir/chat.json"
size=$(stat -c %s "$dir/chat.json")
[ "$size" -eq 672 ] || { echo "bodies.sh: chat.json is $size bytes, not 672" >&2; exit 1; }
chat_body "$model" "Here is the key you asked for: $key" > "$dir/leak.json"
chat_body "gpt-4o-2024-08-06" "${text:0:100}" > "$dir/wrong_model.json"

chunk() {  # delta finish_reason
    printf 'data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"%s","system_fingerprint":"fp_06737a9306","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}\n\n' "$model" "$1" "$2"
}
words=(" the" " quick" " brown" " fox" " jumps" " over" " the" " lazy" " dog," " and" " then" " it" " rests.")
{
    chunk '{"role":"assistant","content":"","refusal":null}' null
    for i in $(seq 0 196); do
        chunk "{\"content\":\"${words[$((i % ${#words[@]}))]}\"}" null
    done
    chunk '{}' '"stop"'
    printf 'data: [DONE]\n\n'
} > "$dir/stream.sse"
events=$(grep -c '^data: ' "$dir/stream.sse")
[ "$events" -eq 200 ] || { echo "bodies.sh: stream.sse has $events events, not 200" >&2; exit 1; }

request_body='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello."}]}'
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
    "${#request_body}" "$request_body" > "$dir/request.http"

# A conversation of alternating turns, each about 600 bytes of prose, padded
# in the last turn so that the body is exactly `bytes` long.
conversation() {  # bytes file
    awk -v bytes="$1" 'BEGIN {
        sentence = "The build failed again after the last change to the parser, and the log shows the same timeout in the integration suite; ";
        turn = ""; while (length(turn) < 560) turn = turn sentence
        head = "{\"messages\":["; tail = "],\"model\":\"gpt-4o-mini\"}"
        body = head; n = 0
        for (;;) {
            role = n % 2 ? "assistant" : "user"
            msg = "{\"role\":\"" role "\",\"content\":\"" turn "\"}"
            if (length(body) + 1 + length(msg) + length(tail) + 200 > bytes) break
            body = body (n ? "," : "") msg; n++
        }
        pad = bytes - length(body) - length(tail) - length(",{\"role\":\"user\",\"content\":\"\"}")
        last = ""; while (length(last) < pad) last = last "x"
        printf "%s,{\"role\":\"user\",\"content\":\"%s\"}%s", body, substr(last, 1, pad), tail
    }' > "$2"
    size=$(stat -c %s "$2")
    [ "$size" -eq "$1" ] || { echo "bodies.sh: $2 is $size bytes, not $1" >&2; exit 1; }
}
conversation 204800 "$dir/request_200k.json"
conversation 1048576 "$dir/request_1m.json"
