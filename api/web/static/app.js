// gpuprice pages: the little the browser does. Every table is complete without this file; with
// it, the market table sorts and switches currency in place, filters apply as they change, and
// the shown view can be copied. The URL always holds the whole view.
"use strict";

(function () {
  const SYMBOLS = { CNY: "¥", USD: "$", EUR: "€", INR: "₹" };
  const NUMERIC = new Set(["money", "native", "number"]);
  const MISSING = "—";
  const DERIVED = {  // a row's CNY figures from its ¥/h (h), GPUs (n) and GB per GPU (m), where it has them
    cny_per_hour: (h) => h,
    cny_per_gpu_hour: (h, n) => (n ? h / n : null),
    cny_per_gb_hour: (h, n, m) => (n && m ? h / (n * m) : null),
  };

  // As the server writes it (Python's format): both round the double's exact value, but on an
  // exact half toFixed goes up and Python to even. toFixed(100) is the exact decimal expansion.
  function fixed(v, digits) {
    const [whole, fraction] = v.toFixed(100).split(".");
    const rest = fraction.slice(digits);
    const tie = rest[0] === "5" && /^0*$/.test(rest.slice(1));
    if (tie && Number(fraction[digits - 1]) % 2 === 0) return whole + "." + fraction.slice(0, digits);
    return v.toFixed(digits);
  }

  function amount(v) {
    return Math.abs(v) >= 1 ? fixed(v, 2) : fixed(v, 4);
  }

  // The form's state as a query string: lists joined with commas, a checkbox's last value, and
  // nothing that is empty or the default, so links stay short.
  function stateQuery(form) {
    const defaults = JSON.parse(form.dataset.defaults || "{}");
    const lists = new Set(defaults._lists || []);
    const values = new Map();
    for (const [name, value] of new FormData(form)) {
      if (!values.has(name)) values.set(name, []);
      values.get(name).push(String(value));
    }
    const query = new URLSearchParams();
    for (const [name, all] of values) {
      let value = lists.has(name) ? all.filter((v) => v.trim()).join(",") : all[all.length - 1];
      if (value === "" || value === undefined) continue;
      const fallback = defaults[name];
      if (fallback !== undefined) {
        const same = name === "cols"
          ? value.split(",").sort().join(",") === fallback.split(",").sort().join(",")
          : value.toLowerCase() === String(fallback).toLowerCase();
        if (same) continue;
      }
      query.append(name, value);
    }
    return query.toString();
  }

  function withQuery(path, query) {
    return query ? path + "?" + query : path;
  }

  function marketPage(form, table) {
    const rates = JSON.parse(document.getElementById("rates").textContent);
    const heads = Array.from(table.tHead.rows[0].cells);
    const body = table.tBodies[0];

    function remember() {
      const query = stateQuery(form);
      history.replaceState(null, "", withQuery(location.pathname, query));
      for (const [id, path] of [["dl-csv", "/market.csv"], ["dl-md", "/market.md"]]) {
        const link = document.getElementById(id);
        if (link) link.href = withQuery(path, query);
      }
      for (const th of heads) {  // each header's link: the view sorted by it (no-JS fallback, new tab)
        const link = th.querySelector("a");
        const params = new URLSearchParams(query);
        const current = th.getAttribute("aria-sort");
        params.set("sort", th.dataset.key);
        if (current === "ascending") params.set("desc", "true"); else params.delete("desc");
        link.href = withQuery(location.pathname, params.toString());
      }
    }

    // A number the row carries for its CNY figures: in its head (`data-<name>`, "" for none), else
    // in its column's cell where the view shows it (api/web/row_head.py): the cell's `data-v`, else
    // the number its text begins with (a price's `data-v` is its rank: its text, always).
    const columns = new Map(heads.map((th, index) => [th.dataset.key, index]));
    // A worded column's words (pricing, availability, yes/no) and the values they stand for (api/web/table.py worded).
    const worded = heads.map((th) => new Map(Object.entries(JSON.parse(th.dataset.words || "{}"))));
    function numberOf(raw) {
      const value = parseFloat(raw);
      return Number.isNaN(value) ? null : value;
    }
    function inCell(tr, key) {
      const td = tr.cells[columns.get(key)];
      return numberOf(key === "price" ? td.textContent : td.dataset.v ?? td.textContent);
    }
    function carried(tr, name, key) {
      const given = tr.dataset[name];
      return given === undefined ? inCell(tr, key) : numberOf(given);
    }
    // A text the row carries, its FX day (`d`) or currency (`c`): in its head, else its column's cell ("" for none).
    function textOf(tr, name, key) {
      const given = tr.dataset[name];
      if (given !== undefined) return given;
      const text = tr.cells[columns.get(key)].textContent.trim();
      return text === MISSING ? "" : text;
    }

    // A row's ¥/h: its `data-h`, else its price × its FX rate, the one multiplication the server
    // checked gives the stored figure to the bit (as pricedb/normalize.py works it out).
    function perHour(tr) {
      return tr.dataset.h !== undefined ? numberOf(tr.dataset.h) : inCell(tr, "price") * carried(tr, "fx", "fx_rate");
    }

    // A CNY figure: its `data-v` ("": none), else worked out from its row's ¥/h, GPUs and GB per
    // GPU as the server does (api/web/table.py DERIVED_MONEY: one division, the same double).
    function cny(tr, td, key) {
      const raw = td.dataset.v;
      if (raw !== undefined) return raw === "" ? null : parseFloat(raw);
      const derive = DERIVED[key];
      if (!derive) return null;
      const h = perHour(tr);
      return h === null ? null : derive(h, carried(tr, "n", "gpu_count"), carried(tr, "m", "gpu_memory_gb"));
    }

    function cellValue(tr, index, kind, key) {
      const td = tr.cells[index];
      if (kind === "money") return cny(tr, td, key);
      // A note or source written once below the table: the cell links to it by its number, which
      // follows the texts' order (api/web/table.py LISTED), so it sorts as the server sorts the texts.
      const href = td.firstElementChild ? td.firstElementChild.getAttribute("href") : null;
      if (href && href[0] === "#") return Number(href.slice(2));
      let raw = td.dataset.v;
      if (raw === undefined) {  // a word with no `data-v` stands for the value its column's head gives it, else itself
        const text = td.textContent.trim();
        raw = text === MISSING ? null : worded[index].get(text) ?? text;
      }
      if (raw === null) return null;
      return NUMERIC.has(kind) ? parseFloat(raw) : raw;
    }

    // A row's offer key (provider, region, sku, pricing), where the view shows them all and so
    // the rows carry no rank in offer-key order (`data-k`, api/web/market.py keys_shown).
    const OFFER_KEY = ["provider", "region", "sku", "pricing"];
    function offerKey(tr) {
      return OFFER_KEY.map((key) => {
        const index = columns.get(key);
        return key === "pricing" ? cellValue(tr, index, "vocab", key) : tr.cells[index].textContent;
      });
    }
    // Python's order of texts, by code point (JavaScript's < compares UTF-16 units, which differs
    // past U+FFFF); then of offer keys, text by text.
    function byCodePoint(a, b) {
      if (a === b) return 0;
      const x = Array.from(a), y = Array.from(b);
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        if (x[i] !== y[i]) return x[i].codePointAt(0) - y[i].codePointAt(0);
      }
      return x.length - y.length;
    }
    function byOfferKey(a, b) {
      if (typeof a === "number") return a - b;  // ranks in offer-key order (`data-k`)
      for (let i = 0; i < a.length; i++) {
        const c = byCodePoint(a[i], b[i]);
        if (c !== 0) return c;
      }
      return 0;
    }

    // As /offers sorts: unknown values after known ones (before them descending), then offer key.
    function sortBy(key, desc) {
      const index = heads.findIndex((th) => th.dataset.key === key);
      if (index < 0) return;
      const kind = heads[index].dataset.kind;
      const ranked = body.rows.length > 0 && body.rows[0].dataset.k !== undefined;
      const keyed = Array.from(body.rows, (tr) => [
        cellValue(tr, index, kind, key), ranked ? Number(tr.dataset.k) : offerKey(tr), tr,
      ]);
      keyed.sort((a, b) => {
        let c = (a[0] === null) - (b[0] === null);
        if (c === 0 && a[0] !== null) c = a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
        if (c === 0) c = byOfferKey(a[1], b[1]);
        return desc ? -c : c;
      });
      body.append(...keyed.map((entry) => entry[2]));
      for (const th of heads) th.removeAttribute("aria-sort");
      heads[index].setAttribute("aria-sort", desc ? "descending" : "ascending");
      form.elements.sort.value = key;
      form.elements.desc.value = desc ? "true" : "false";
      remember();
    }

    function showCurrency(currency) {
      const symbol = currency === "native" ? table.dataset.native : SYMBOLS[currency];
      const money = [];
      heads.forEach((th, index) => {
        if (th.dataset.kind !== "money") return;
        money.push([index, th.dataset.key]);
        const unit = th.dataset.unit;
        th.querySelector("a").textContent = unit ? symbol + "/" + unit : symbol;
      });
      for (const tr of body.rows) {
        for (const [index, key] of money) {
          const td = tr.cells[index];
          const value = cny(tr, td, key);
          if (value === null) continue;
          let rate = null;
          if (currency === "CNY") rate = 1;
          else if (currency === "native") rate = carried(tr, "fx", "fx_rate") || null;
          else rate = (rates[textOf(tr, "d", "fx_date")] || {})[currency] || null;
          const native = currency === "native" ? " " + textOf(tr, "c", "currency") : "";
          td.textContent = rate === null ? MISSING : amount(value / rate) + native;
        }
      }
      table.dataset.cur = currency;
      remember();
    }

    table.tHead.addEventListener("click", (event) => {
      const link = event.target.closest("th a");
      if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
      event.preventDefault();
      const th = link.closest("th");
      sortBy(th.dataset.key, th.getAttribute("aria-sort") === "ascending");
    });
    form.elements.cur.addEventListener("change", (event) => {
      event.stopPropagation();
      showCurrency(event.target.value);
    });
    remember();
  }

  // A form sends only what differs from the defaults, so its URL stays short and readable.
  function shortForm(form) {
    const go = () => location.assign(withQuery(form.getAttribute("action") || location.pathname, stateQuery(form)));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      go();
    });
    return go;
  }

  // The market's filters apply as they change (the Apply button stays for keyboards and no-JS).
  function applyingForm(form) {
    const go = shortForm(form);
    form.addEventListener("change", (event) => {
      if (event.target.matches("input[type=number], input[type=text], input[type=date]")) return;  // on Enter
      go();
    });
  }

  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return;
    }
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "sr";
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }

  function copyButtons() {
    const status = document.getElementById("copied");
    for (const button of document.querySelectorAll("button[data-copy]")) {
      button.addEventListener("click", async () => {
        const link = document.getElementById(button.dataset.copy === "md" ? "dl-md" : "dl-csv");
        const response = await fetch(link.href, { headers: { Accept: "text/plain" } });
        await copyText(await response.text());
        if (status) status.textContent = status.dataset.done + " " + button.textContent.trim().split(" ").pop();
      });
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = document.getElementById("view");
    const table = document.getElementById("market");
    if (form) applyingForm(form);
    if (form && table) marketPage(form, table);
    for (const other of document.querySelectorAll("form[data-defaults]:not(#view)")) shortForm(other);
    copyButtons();
  });
})();
