"use strict";
// The viewer: reads the page model from the JSON block and builds every element with textContent (row data is
// untrusted text: it is never parsed as HTML). Filters: config, pair type, difficulty, split and free text.
(function () {
  const model = JSON.parse(document.getElementById("data").textContent);
  const REJECTS = ":rejects"; // the config select's value for the rejects view (no config name has a colon)
  const PAGE = 100; // rows listed at once; "Show more" lists more
  const FILTERS = ["pair_type", "difficulty", "split"];
  const state = { config: null, pair_type: "", difficulty: "", split: "", search: "", limit: PAGE };
  const haystacks = new WeakMap();

  function $(id) {
    return document.getElementById(id);
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function fmt(x) {
    if (x === null || x === undefined) return "–";
    if (typeof x === "boolean") return x ? "yes" : "no";
    if (typeof x === "number") return Number.isInteger(x) ? String(x) : String(Math.round(x * 1000) / 1000);
    return String(x);
  }

  function stats(pairs) {
    const box = el("div", "head");
    for (const [name, value] of pairs) {
      if (value === undefined) continue;
      box.append(el("span", name === "" ? "badge" : "stat", name === "" ? fmt(value) : name + ": " + fmt(value)));
    }
    return box;
  }

  // One message of a conversation. A multi-turn one shows as a chat: reasoning collapsed, each tool call and each
  // tool result with its tool and call id, and the turn's label (from the `turns` labeler) on the assistant's turns.
  function messageBox(m) {
    const msg = el("div", "msg");
    msg.dataset.role = m.role;
    let role = m.role || "(no role)";
    if (m.role === "tool") role += " · " + (m.name || "?") + (m.tool_call_id ? " [" + m.tool_call_id + "]" : "");
    const head = el("div", "role", role);
    if (m.turn) {
      const t = m.turn;
      let tag = t.ok === true ? "good turn" : t.ok === false ? "bad turn" : "turn";
      if (t.verdict) tag += " · " + t.verdict;
      if (t.tool_errors) tag += " · " + t.tool_errors + " tool error(s)";
      if (t.tool_failures) tag += " · " + t.tool_failures + " tool failure(s)";
      head.append(el("span", "turn-tag " + (t.ok === true ? "good" : t.ok === false ? "bad" : ""), tag));
    }
    msg.append(head);
    if (m.reasoning) msg.append(collapsible("reasoning", m.reasoning));
    if (m.content || !m.tool_calls) msg.append(el("pre", null, m.content));
    for (const c of m.tool_calls || []) {
      const call = el("pre", "tool-call", "→ " + (c.name || "?") + (c.id ? " [" + c.id + "]" : "") + "\n" + c.arguments);
      msg.append(call);
    }
    return msg;
  }

  function messagesBlock(title, messages) {
    const box = el("div", "messages");
    if (title) box.append(el("h3", null, title));
    if (!messages || messages.length === 0) box.append(el("p", "muted", "(no messages)"));
    for (const m of messages || []) box.append(messageBox(m));
    return box;
  }

  function table(header, rows, rowClass) {
    const t = el("table");
    const head = el("tr");
    for (const h of header) head.append(el("th", null, h));
    t.append(head);
    rows.forEach(function (cells, i) {
      const tr = el("tr", rowClass ? rowClass(i) : null);
      for (const c of cells) {
        const td = el("td");
        if (c instanceof Node) td.append(c);
        else td.textContent = fmt(c);
        tr.append(td);
      }
      t.append(tr);
    });
    return t;
  }

  function collapsible(summary, body) {
    if (body === null || body === undefined || body === "") return "–";
    const d = el("details");
    d.append(el("summary", null, summary), el("pre", null, body));
    return d;
  }

  function scoresBlock(scores) {
    if (!scores || scores.length === 0) return el("span");
    return table(["score", "value"], scores.map((s) => [s.name, s.score]));
  }

  function labelsBlock(labels) {
    if (!labels || labels.length === 0) {
      return el("p", "muted", model.labels === "read" ? "No label rows of this rollout in the label folders." : "");
    }
    return table(
      ["labeler", "aspect", "verdict", "score", "confidence", "rationale", "raw"],
      labels.map((l) => [l.source, l.aspect, l.verdict, l.score, l.confidence,
        collapsible("rationale", l.rationale), collapsible("raw", l.raw)]),
      (i) => "labels-row" + (labels[i].used ? "" : " unused")
    );
  }

  function side(name, s) {
    const box = el("div", "side " + name);
    box.append(el("h3", null, name));
    box.append(stats([["score", s.score], ["correct", s.correct], ["tokens", s.n_tokens], ["rollout", s.rollout_id]]));
    box.append(messagesBlock(null, s.messages), scoresBlock(s.scores));
    const labels = labelsBlock(s.labels);
    labels.classList.add("labels");
    box.append(labels);
    return box;
  }

  function pairCard(r) {
    const card = el("article", "row pair");
    card.append(stats([["", r.pair_type], ["", r.split], ["task", r.task], ["margin", r.margin],
      ["confidence", r.confidence], ["agreement", r.agreement], ["pair", r.id]]));
    card.append(messagesBlock("prompt", r.prompt));
    const sides = el("div", "sides");
    sides.append(side("chosen", r.chosen), side("rejected", r.rejected));
    card.append(sides);
    if (r.label_sources.length) card.append(el("p", "muted", "label sources: " + r.label_sources.join(", ")));
    return card;
  }

  function prmCard(r) {
    const card = el("article", "row prm");
    card.append(stats([["", r.split], ["task", r.task], ["labeler", r.labeler], ["method", r.method],
      ["first error step", r.first_error_step], ["min score", r.min_score], ["rollout", r.rollout_id]]));
    card.append(messagesBlock("prompt", r.prompt));
    const steps = el("ol", "steps");
    steps.start = 0;
    r.steps.forEach(function (s, i) {
      const kind = s.label === true ? "good" : s.label === false ? "bad" : "unknown";
      const li = el("li", "step " + kind + (i === r.first_error_step ? " first-error" : ""));
      li.append(el("span", "tag", kind + " · soft " + fmt(s.soft)), el("pre", null, s.text));
      steps.append(li);
    });
    card.append(el("h3", null, "steps"), steps);
    return card;
  }

  function rlCard(r) {
    const card = el("article", "row rl");
    card.append(stats([["", r.difficulty], ["", r.split], ["task", r.task], ["pass rate", r.pass_rate],
      ["samples", r.n_samples], ["verified", r.n_verified], ["correct", r.n_correct],
      ["mean reward", r.mean_reward], ["prompt", r.id]]));
    card.append(messagesBlock("prompt", r.prompt));
    if (r.reference !== null) card.append(el("h3", null, "reference"), el("pre", null, r.reference));
    return card;
  }

  function sftCard(r) {
    const card = el("article", "row sft");
    card.append(stats([["", r.split], ["task", r.task], ["reward", r.reward], ["rank", r.rank],
      ["correct", r.correct], ["confidence", r.confidence], ["tokens", r.n_tokens], ["rollout", r.id]]));
    card.append(messagesBlock("prompt", r.prompt), messagesBlock("completion", r.completion));
    card.append(scoresBlock(r.scores));
    const labels = labelsBlock(r.labels);
    labels.classList.add("labels");
    card.append(labels);
    return card;
  }

  function otherCard(r) {
    const card = el("article", "row other");
    card.append(table(["column", "value"], r.fields.map(([k, v]) => [k, v === null ? null : el("pre", null, v)])));
    return card;
  }

  const CARDS = { pair: pairCard, prm: prmCard, rl: rlCard, sft: sftCard, other: otherCard };

  function rejectCard(dataset, group) {
    const card = el("article", "row reject");
    card.append(stats([["", dataset], ["reason", group.reason], ["rows", group.count]]));
    card.append(table(["row id", "stage", "detail", "payload"],
      group.examples.map((e) => [e.row_id, e.stage, e.detail, collapsible("payload", e.payload)])));
    return card;
  }

  function strings(value, out) {
    if (typeof value === "string") out.push(value.toLowerCase());
    else if (Array.isArray(value)) value.forEach((v) => strings(v, out));
    else if (value && typeof value === "object") Object.keys(value).forEach((k) => strings(value[k], out));
    return out;
  }

  function matchesText(item, needle) {
    if (!needle) return true;
    if (!haystacks.has(item)) haystacks.set(item, strings(item, []).join("\n"));
    return haystacks.get(item).includes(needle);
  }

  function current() {
    return model.configs.find((c) => c.name === state.config) || null;
  }

  function fillSelect(select, values, label) {
    select.replaceChildren();
    const all = el("option", null, "all " + label);
    all.value = "";
    select.append(all);
    for (const v of values) {
      const o = el("option", null, v);
      o.value = v;
      select.append(o);
    }
  }

  function setupFilters() {
    const config = current();
    for (const key of FILTERS) {
      const values = config ? config.filters[key] || [] : [];
      $(key + "-filter").classList.toggle("hidden", values.length === 0);
      fillSelect($(key), values, key.replace("_", " ") + "s");
      state[key] = "";
    }
  }

  function render() {
    const main = $("rows");
    main.replaceChildren();
    const needle = state.search.trim().toLowerCase();
    let items, total, noun, card;
    if (state.config === REJECTS) {
      items = [];
      for (const r of model.rejects || []) for (const g of r.reasons) items.push([r.dataset, g]);
      items = items.filter(([d, g]) => matchesText(g, needle) || (needle && d.toLowerCase().includes(needle)));
      total = (model.rejects || []).reduce((n, r) => n + r.reasons.length, 0);
      noun = "reject reasons";
      card = ([d, g]) => rejectCard(d, g);
      $("left-out").textContent = "";
    } else {
      const config = current();
      items = config.rows.filter(
        (r) => FILTERS.every((k) => !state[k] || r[k] === state[k]) && matchesText(r, needle)
      );
      total = config.rows.length;
      noun = "rows";
      card = (r) => {
        const c = CARDS[config.kind](r);
        c.dataset.id = r.id;
        return c;
      };
      $("left-out").textContent = config.left_out
        ? config.left_out + " of " + config.total + " rows of " + config.name + " are not in this page (at most " +
          model.max_rows + " per config, the first in id order: rewardmill view --max-rows N embeds more)."
        : "";
    }
    const listed = items.slice(0, state.limit);
    for (const item of listed) main.append(card(item));
    $("count").textContent = "Showing " + items.length + " of " + total + " " + noun +
      (listed.length < items.length ? " (listing the first " + listed.length + ")" : "");
    $("more").classList.toggle("hidden", listed.length >= items.length);
  }

  function overview() {
    const rejected = {};
    for (const r of model.rejects || []) rejected[r.dataset] = r.total;
    const rows = model.configs.map((c) => [c.name, c.schema, c.total, c.shown,
      model.rejects ? rejected[c.name] || 0 : "not exported"]);
    for (const r of model.rejects || []) {
      if (!model.configs.some((c) => c.name === r.dataset)) rows.push([r.dataset, "–", "–", "–", r.total]);
    }
    const summary = table(["config", "schema", "rows", "in this page", "rejected"], rows);
    summary.id = "overview";
    $("overview").replaceWith(summary);
  }

  function init() {
    $("title").textContent = model.title;
    $("source").textContent = model.kind === "export"
      ? "Export folder (Hugging Face Hub layout). Static page: nothing is fetched."
      : "Dataset folder " + model.folder + ". Static page: nothing is fetched.";
    overview();
    for (const note of model.notes) $("notes").append(el("li", null, note));
    const select = $("config");
    for (const c of model.configs) {
      const o = el("option", null, c.name + " (" + c.kind + ", " + c.total + " rows)");
      o.value = c.name;
      select.append(o);
    }
    if (model.rejects) {
      const n = model.rejects.reduce((k, r) => k + r.total, 0);
      const o = el("option", null, "rejects (" + n + " rows)");
      o.value = REJECTS;
      select.append(o);
    }
    const first = model.configs.find((c) => c.name === "pairs") || model.configs[0];
    state.config = first ? first.name : REJECTS;
    select.value = state.config;
    select.addEventListener("change", function () {
      state.config = select.value;
      state.limit = PAGE;
      setupFilters();
      render();
    });
    for (const key of FILTERS) {
      $(key).addEventListener("change", function () {
        state[key] = $(key).value;
        state.limit = PAGE;
        render();
      });
    }
    $("search").addEventListener("input", function () {
      state.search = $("search").value;
      state.limit = PAGE;
      render();
    });
    $("more").addEventListener("click", function () {
      state.limit += PAGE;
      render();
    });
    setupFilters();
    render();
  }

  init();
})();
