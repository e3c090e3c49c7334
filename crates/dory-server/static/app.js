// The page at /: streams a completion from /v1/completions and colours each generated
// token by the passes of the loop it used (Dory's adaptive depth). Plain JS, no build.
"use strict";

const $ = (id) => document.getElementById(id);
let maxPasses = 1;
let controller = null;

// Blue for a token that left the loop after one pass, red for one that ran all P.
function colour(passes) {
  const t = maxPasses > 1 ? (passes - 1) / (maxPasses - 1) : 1;
  return `hsl(${Math.round(210 - 210 * t)}, 75%, 85%)`;
}

// The request headers, with the API key when one is entered (a server started with
// --api-key answers 401 without it). The key lives for this tab only.
function headers(extra = {}) {
  const key = $("api-key").value.trim();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

async function loadModel() {
  try {
    const r = await fetch("/v1/models", { headers: headers() });
    if (r.status === 401) {
      $("key").hidden = false;
      $("model").textContent = "this server needs an API key: enter it here";
      return;
    }
    const m = (await r.json()).data[0];
    maxPasses = m.dory.passes;
    $("model").textContent = `${m.id} · ${m.dory.parameters.toLocaleString()} parameters · ` +
      `${m.dory.layers.length} layers × ${m.dory.passes} passes · attention ${m.dory.attention} · ` +
      `exit ${m.dory.exit} · ${m.dory.backend}`;
  } catch (e) {
    $("model").textContent = `cannot read /v1/models: ${e}`;
  }
  const legend = $("legend");
  legend.replaceChildren("passes:");
  for (let p = 1; p <= maxPasses; p++) {
    const s = document.createElement("span");
    s.className = "swatch";
    s.style.background = colour(p);
    s.textContent = p;
    legend.appendChild(s);
  }
}

function setRunning(running) {
  $("generate").disabled = running;
  $("stop").disabled = !running;
}

// Reads server-sent events from a fetch response, calling onData with each data line.
async function readEvents(response, onData) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of block.split("\n")) {
        if (line.startsWith("data:")) onData(line.slice(5).trim());
      }
    }
  }
}

async function generate(event) {
  event.preventDefault();
  const out = $("output");
  const prompt = $("prompt").value;
  out.textContent = "";
  const shown = document.createElement("span");
  shown.className = "prompt";
  shown.textContent = prompt;
  out.appendChild(shown);
  $("status").textContent = "";
  $("count").textContent = "0";
  $("tps").textContent = "–";
  $("mean-passes").textContent = "–";

  const body = {
    model: "dory",
    prompt,
    stream: true,
    max_tokens: Number($("max-tokens").value) || 128,
    temperature: Number($("temperature").value),
  };
  if ($("seed").value !== "") body.seed = Number($("seed").value);
  if ($("exit").value.trim() !== "") body.exit = $("exit").value.trim();

  controller = new AbortController();
  setRunning(true);
  let count = 0, passesSum = 0, firstAt = null;
  try {
    const r = await fetch("/v1/completions", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    if (!r.ok) {
      const e = await r.json().catch(() => ({ error: { message: r.statusText } }));
      throw new Error(e.error.message);
    }
    await readEvents(r, (data) => {
      if (data === "[DONE]") return;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message);
      const d = chunk.dory;
      if (d && d.token !== undefined) {
        const now = performance.now();
        if (firstAt === null) firstAt = now;
        count += 1;
        passesSum += d.passes;
        const span = document.createElement("span");
        span.className = "tok";
        span.dataset.passes = d.passes;
        span.style.background = colour(d.passes);
        span.title = `token ${d.token} · ${d.passes} of ${maxPasses} passes`;
        span.textContent = chunk.choices[0].text;
        out.appendChild(span);
        $("count").textContent = count;
        $("mean-passes").textContent = (passesSum / count).toFixed(2);
        // Live rate over the tokens after the first (the first comes with the prompt).
        if (count > 1) $("tps").textContent = ((count - 1) / ((now - firstAt) / 1000)).toFixed(1);
      } else if (d && d.tokens_per_second !== undefined) {
        $("tps").textContent = d.tokens_per_second.toFixed(1);
        $("mean-passes").textContent = d.mean_passes.toFixed(2);
        $("status").textContent = `finished: ${chunk.choices[0].finish_reason}`;
        $("status").style.color = "#2b6a3a";
      }
    });
  } catch (e) {
    $("status").style.color = "";
    $("status").textContent = e.name === "AbortError" ? "stopped" : `error: ${e.message}`;
  } finally {
    setRunning(false);
    controller = null;
  }
}

$("form").addEventListener("submit", generate);
$("stop").addEventListener("click", () => controller && controller.abort());
$("api-key").value = sessionStorage.getItem("dory-api-key") || "";
$("api-key").addEventListener("change", () => {
  sessionStorage.setItem("dory-api-key", $("api-key").value.trim());
  loadModel();
});
loadModel();
