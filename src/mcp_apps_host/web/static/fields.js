// JSON Schema (a tool's inputSchema) → form fields. Each builder returns
// {node, read()} where read() gives {present, value} and throws FieldError for input
// that cannot become a value. Schemas this does not understand get a raw JSON box.

import { el, prettyJSON } from "./dom.js";

export class FieldError extends Error {
  constructor(message, input) {
    super(message);
    this.input = input;
  }
}

let uid = 0;
const nextId = () => `f${++uid}`;

const PRIMITIVES = new Set(["string", "number", "integer", "boolean"]);

/** The one type a field is drawn as. */
export function kindOf(schema) {
  if (!schema || typeof schema !== "object") return "json";
  if (Array.isArray(schema.enum) && schema.enum.length) return "enum";
  let type = schema.type;
  if (Array.isArray(type)) type = type.find((t) => t !== "null");
  if (!type && schema.properties) type = "object";
  if (PRIMITIVES.has(type)) return type;
  if (type === "object" && schema.properties && typeof schema.properties === "object") return "object";
  if (type === "array" && schema.items && PRIMITIVES.has(kindOf(schema.items))) return "array";
  if (type === "array" && schema.items && kindOf(schema.items) === "enum") return "array";
  return "json";
}

/** Build the fields of an object schema; `values` overrides defaults (used by the JSON toggle). */
export function buildObjectFields(schema, values) {
  const props = (schema && schema.properties) || {};
  const required = new Set(Array.isArray(schema && schema.required) ? schema.required : []);
  const fields = Object.entries(props).map(([name, sub]) => ({
    name,
    ...buildField(sub, { name, required: required.has(name), value: values ? values[name] : undefined, hasValue: !!values && name in values }),
  }));
  const node = el("div", { class: "fields" }, fields.map((f) => f.node));
  return {
    node,
    names: Object.keys(props),
    read() {
      const out = {};
      for (const f of fields) {
        const r = f.read();
        if (r.present) out[f.name] = r.value;
      }
      return out;
    },
  };
}

function buildField(schema, opts) {
  const start = opts.hasValue ? opts.value : schema && schema.default;
  const kind = kindOf(schema);
  const builder = BUILDERS[kind];
  return builder(schema || {}, { ...opts, start, hasStart: start !== undefined });
}

/** Label, required mark and help text around one control. */
function wrap(schema, opts, control, id, inline = false) {
  const title = schema.title || opts.name;
  const helpId = schema.description ? `${id}-help` : undefined;
  if (helpId && control.setAttribute) control.setAttribute("aria-describedby", helpId);
  const label = el(
    "label",
    { for: id, class: "field-label" },
    title,
    opts.required ? el("span", { class: "req", title: "required", "aria-hidden": "true" }, "*") : null,
    title !== opts.name && opts.name ? el("code", { class: "field-name" }, opts.name) : null,
  );
  return el(
    "div",
    { class: `field${inline ? " field-inline" : ""}`, "data-field": opts.name },
    inline ? [control, label] : [label, control],
    helpId ? el("div", { class: "help", id: helpId }, schema.description) : null,
  );
}

function textInput(schema, opts) {
  const id = nextId();
  const long = schema.format === "textarea" || (schema.maxLength ?? 0) > 300;
  const type = { email: "email", uri: "url", url: "url", date: "date", time: "time" }[schema.format] || "text";
  const input = long
    ? el("textarea", { id, rows: 3, class: "input" })
    : el("input", { id, type, class: "input", spellcheck: "false" });
  if (opts.required) input.required = true;
  if (schema.minLength !== undefined) input.minLength = schema.minLength;
  if (schema.maxLength !== undefined) input.maxLength = schema.maxLength;
  if (schema.pattern) input.title = `Must match ${schema.pattern}`;
  if (schema.format && type === "text") input.placeholder = schema.format;
  if (opts.hasStart) input.value = String(opts.start);
  return { id, input };
}

const BUILDERS = {
  string(schema, opts) {
    const { id, input } = textInput(schema, opts);
    return {
      node: opts.bare ? input : wrap(schema, opts, input, id),
      read() {
        // An empty optional string is "not given", not "".
        if (input.value === "" && !opts.required) return { present: false };
        return { present: true, value: input.value };
      },
    };
  },

  number(schema, opts) {
    const id = nextId();
    const input = el("input", { id, type: "number", class: "input", inputmode: "decimal" });
    input.step = kindOf(schema) === "integer" ? "1" : "any";
    if (schema.minimum !== undefined) input.min = schema.minimum;
    if (schema.maximum !== undefined) input.max = schema.maximum;
    if (opts.required) input.required = true;
    if (opts.hasStart) input.value = String(opts.start);
    return {
      node: opts.bare ? input : wrap(schema, opts, input, id),
      read() {
        if (input.value === "") {
          if (input.validity.badInput) throw new FieldError("Not a number.", input);
          return { present: false };
        }
        return { present: true, value: Number(input.value) };
      },
    };
  },

  integer(schema, opts) {
    return BUILDERS.number(schema, opts);
  },

  boolean(schema, opts) {
    const id = nextId();
    const input = el("input", { id, type: "checkbox", class: "checkbox" });
    input.checked = opts.start === true;
    // An untouched optional checkbox without a default is left out rather than sent as false.
    let touched = opts.hasStart || opts.required;
    input.addEventListener("change", () => (touched = true));
    return {
      node: opts.bare ? input : wrap(schema, opts, input, id, true),
      read: () => (touched ? { present: true, value: input.checked } : { present: false }),
    };
  },

  enum(schema, opts) {
    const id = nextId();
    const values = schema.enum;
    const select = el("select", { id, class: "input" });
    // Options carry an index, so any JSON value (number, null, string) round-trips exactly.
    if (!opts.required || !opts.hasStart) {
      select.append(el("option", { value: "" }, opts.required ? "Choose…" : "— not set —"));
    }
    values.forEach((v, i) => select.append(el("option", { value: String(i) }, typeof v === "string" ? v : prettyJSON(v))));
    if (opts.required) select.required = true;
    if (opts.hasStart) {
      const i = values.findIndex((v) => JSON.stringify(v) === JSON.stringify(opts.start));
      if (i >= 0) select.value = String(i);
    }
    return {
      node: opts.bare ? select : wrap(schema, opts, select, id),
      read: () => (select.value === "" ? { present: false } : { present: true, value: values[Number(select.value)] }),
    };
  },

  array(schema, opts) {
    const id = nextId();
    const rows = [];
    const list = el("div", { class: "array-rows" });
    const itemSchema = schema.items;
    const addRow = (value, hasValue) => {
      const field = buildField(itemSchema, { name: "", required: true, value, hasValue, bare: true });
      const row = el("div", { class: "array-row" }, field.node);
      const entry = { field, row };
      row.append(
        el("button", {
          type: "button", class: "icon-btn icon-btn-small", "aria-label": "Remove item", title: "Remove item",
          onclick: () => { rows.splice(rows.indexOf(entry), 1); row.remove(); },
        }, "×"),
      );
      rows.push(entry);
      list.append(row);
      return field;
    };
    if (Array.isArray(opts.start)) for (const v of opts.start) addRow(v, true);
    const add = el("button", {
      type: "button", class: "btn btn-small btn-ghost", id,
      onclick: () => { addRow(undefined, false); const last = list.lastElementChild; last && last.querySelector("input,select,textarea")?.focus(); },
    }, "+ Add item");
    const box = el("div", { class: "array" }, list, add);
    return {
      node: wrap(schema, opts, box, id),
      read() {
        const out = [];
        for (const { field } of rows) {
          const r = field.read();
          if (r.present) out.push(r.value);
        }
        if (!out.length && !opts.required && !opts.hasStart) return { present: false };
        return { present: true, value: out };
      },
    };
  },

  object(schema, opts) {
    const inner = buildObjectFields(schema, opts.hasStart && opts.start && typeof opts.start === "object" ? opts.start : undefined);
    const legend = el("legend", {}, schema.title || opts.name, opts.required ? el("span", { class: "req", "aria-hidden": "true" }, "*") : null);
    const node = el("fieldset", { class: "field fieldset", "data-field": opts.name }, legend,
      schema.description ? el("div", { class: "help" }, schema.description) : null, inner.node);
    return {
      node,
      read() {
        const value = inner.read();
        if (!Object.keys(value).length && !opts.required) return { present: false };
        return { present: true, value };
      },
    };
  },

  json(schema, opts) {
    const id = nextId();
    const input = el("textarea", { id, rows: 3, class: "input code", spellcheck: "false", placeholder: "JSON value" });
    if (opts.hasStart) input.value = prettyJSON(opts.start);
    input.addEventListener("input", () => input.setCustomValidity(""));
    return {
      node: opts.bare ? input : wrap(schema, opts, input, id),
      read() {
        if (input.value.trim() === "") {
          if (opts.required) throw new FieldError("Required: enter a JSON value.", input);
          return { present: false };
        }
        try {
          return { present: true, value: JSON.parse(input.value) };
        } catch (err) {
          throw new FieldError(`Not valid JSON: ${/** @type {SyntaxError} */ (err).message}`, input);
        }
      },
    };
  },
};
