-- Shared by the per-front-door wrk scripts (loaded with dofile). Each script sets `request_body`,
-- `request_headers` and `ok_marker` (a substring a successful answer must contain) before calling install().
-- A response counts as bad when its status is not 200, it lacks ok_marker, or it carries a tool/protocol
-- error marker; bad counts are collected from every wrk thread in done() and printed with the latencies.

threads = {}

function install(path, headers, body, ok_marker, bad_markers)
  wrk.method = "POST"
  wrk.path = path
  wrk.body = body
  for k, v in pairs(headers) do wrk.headers[k] = v end
  wrk.headers["Content-Type"] = "application/json"
  function setup(thread) table.insert(threads, thread) end
  function init(args) failures = 0; first_bad = nil end
  function response(status, hdrs, resp)
    local bad = status ~= 200 or not string.find(resp, ok_marker, 1, true)
    if not bad then
      for _, m in ipairs(bad_markers) do
        if string.find(resp, m, 1, true) then bad = true; break end
      end
    end
    if bad then
      failures = failures + 1
      if first_bad == nil then first_bad = status .. " " .. string.sub(resp, 1, 300) end
    end
  end
  function done(summary, latency, requests)
    local bad, sample = 0, ""
    for _, t in ipairs(threads) do
      bad = bad + (t:get("failures") or 0)
      if sample == "" and t:get("first_bad") then sample = t:get("first_bad") end
    end
    local socket_errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
    io.write(string.format(
      "JSON {\"requests\":%d,\"seconds\":%.3f,\"p50_ms\":%.3f,\"p95_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,"
        .. "\"mean_ms\":%.3f,\"bad_responses\":%d,\"non_2xx\":%d,\"socket_errors\":%d}\n",
      summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(95) / 1000,
      latency:percentile(99) / 1000, latency.max / 1000, latency.mean / 1000, bad, summary.errors.status,
      socket_errors))
    if sample ~= "" then io.stderr:write("first bad response: " .. sample .. "\n") end
  end
end

