// Used by deploy_files.sh, run with node and HashiCorp's HCL parser
// (@cdktf/hcl2json, the Go HCL library built to WebAssembly) on NODE_PATH:
//   node hcl.js json FILE [NAME=VALUE ...]
//       prints FILE as the parser's JSON
//   node hcl.js job FILE [NAME=VALUE ...]
//       prints FILE's job as Nomad reads it when run with `-var NAME=VALUE`:
//       every variable at its value (given, else its default; a VALUE that
//       is JSON is taken as JSON, so lists and bools can be given), every
//       variable's validation checked, the locals, the expressions and the
//       dynamic blocks evaluated; what Nomad interpolates at run time
//       (${node.unique.id}, ${attr.…}, ${meta.…}, ${NOMAD_ALLOC_DIR}) is
//       left as that text
//   node hcl.js check FILE
//       checks every block and attribute of FILE against Nomad's job
//       specification (nomad-jobspec.json beside this file), dynamic blocks'
//       content included; prints each one Nomad does not know and exits 1
//   node hcl.js args FILE [NAME=VALUE ...]
//       prints the args of that job's one task, one a line, with those run
//       time values taken from the environment variables of the same names
//       (dots as underscores)
// The expressions are parsed by the same library (getExpressionAst) and
// evaluated here: the functions and operators the deploy files use, no
// more. Exits 1, saying why, on a parse error, a failed validation or an
// expression it cannot evaluate.
'use strict';
const fs = require('fs');
const { parse, getExpressionAst } = require('@cdktf/hcl2json');

// What Nomad itself interpolates when it places the task, never the HCL parser.
const RUNTIME_ROOTS = /^(node|attr|meta|NOMAD_\w+)$/;

class Runtime {
  constructor(text) { this.text = text; }
}

function fail(message) { throw new Error(message); }

// HCL's escapes of a literal template part: $${ and %%{ are ${ and %{.
function unescapeLiteral(text) { return text.replace(/\$\$\{/g, '${').replace(/%%\{/g, '%{'); }

function asString(value, where) {
  if (value instanceof Runtime) return value.text;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return fail(`${where}: cannot use ${JSON.stringify(value)} as a string`);
}

function truthy(value, where) {
  if (typeof value !== 'boolean') fail(`${where}: the condition is ${JSON.stringify(value)}, not a bool`);
  return value;
}

const FUNCTIONS = {
  length: (list) => (Array.isArray(list) ? list.length : Object.keys(list).length),
  concat: (...lists) => [].concat(...lists),
  contains: (list, value) => list.includes(value),
  format: (spec, ...args) => {
    let i = 0;
    return spec.replace(/%[sdv%]/g, (verb) => (verb === '%%' ? '%' : asString(args[i++], 'format')));
  },
};

const BINARY = {
  equal: (a, b) => JSON.stringify(a) === JSON.stringify(b),
  notEqual: (a, b) => JSON.stringify(a) !== JSON.stringify(b),
  logicalAnd: (a, b) => truthy(a, '&&') && truthy(b, '&&'),
  logicalOr: (a, b) => truthy(a, '||') || truthy(b, '||'),
  greaterThan: (a, b) => a > b,
  greaterThanOrEqual: (a, b) => a >= b,
  lessThan: (a, b) => a < b,
  lessThanOrEqual: (a, b) => a <= b,
  add: (a, b) => a + b,
  subtract: (a, b) => a - b,
};

// evalAst(node, scope): the value of one parsed expression.
function evalAst(node, scope) {
  const kids = node.children || [];
  const text = node.meta && node.meta.value;
  switch (node.type) {
    case 'template':
      return kids.map((kid) => asString(evalAst(kid, scope), text)).join('');
    case 'templateWrap':
    case '': // parentheses
      return evalAst(kids[0], scope);
    case 'literalValue':
      if (node.meta.type === 'string') return unescapeLiteral(node.meta.value);
      if (node.meta.type === 'number') return Number(node.meta.value);
      if (node.meta.type === 'bool') return node.meta.value === 'true';
      return null;
    case 'tuple':
      return kids.map((kid) => evalAst(kid, scope));
    case 'scopeTraversal':
      return lookup(node.meta.traversal.map((part) => part.segment), node.meta.fullAccessor, scope);
    case 'index': {
      const collection = evalAst(kids[0], scope);
      const key = evalAst(kids[1], scope);
      if (collection === null || typeof collection !== 'object' || !(key in collection)) fail(`${text}: no element ${JSON.stringify(key)}`);
      return collection[key];
    }
    case 'function': {
      const fn = FUNCTIONS[node.meta.name] || fail(`${text}: the function ${node.meta.name} is not evaluated here`);
      return fn(...kids.map((kid) => evalAst(kid, scope)));
    }
    case 'conditional':
      return truthy(evalAst(kids[0], scope), text) ? evalAst(kids[1], scope) : evalAst(kids[2], scope);
    case 'binaryOp': {
      const op = BINARY[node.meta.operator] || fail(`${text}: the operator ${node.meta.operator} is not evaluated here`);
      return op(evalAst(kids[0], scope), evalAst(kids[1], scope));
    }
    case 'unaryOp':
      if (node.meta.operator === 'logicalNot') return !truthy(evalAst(kids[0], scope), text);
      if (node.meta.operator === 'negate') return -evalAst(kids[0], scope);
      return fail(`${text}: the operator ${node.meta.operator} is not evaluated here`);
    default:
      return fail(`${text}: a ${node.type} expression is not evaluated here`);
  }
}

function lookup(path, accessor, scope) {
  if (RUNTIME_ROOTS.test(path[0])) return new Runtime('${' + accessor + '}');
  let value;
  if (path[0] === 'var') value = scope.vars;
  else if (path[0] === 'local') value = scope.locals();
  else if (path[0] in scope.iterators) value = scope.iterators;
  else fail(`\${${accessor}}: unknown`);
  for (const segment of path.slice(path[0] === 'var' || path[0] === 'local' ? 1 : 0)) {
    if (value === null || typeof value !== 'object' || !(segment in value)) fail(`\${${accessor}}: unknown`);
    value = value[segment];
  }
  return value;
}

// expressionAst(text): the parsed expression of one string of the parser's
// JSON: "${x}" alone is the expression x (its value keeps its type, as in
// HCL); any other string is a template (parsed as a heredoc, whose content
// needs no escapes; its final newline is dropped).
async function expressionAst(text) {
  if (text.startsWith('${') && text.endsWith('}')) {
    try { return await getExpressionAst('expression.hcl', text.slice(2, -1)); } catch (error) { /* a template */ }
  }
  const ast = await getExpressionAst('expression.hcl', `<<EOT\n${text}\nEOT\n`);
  const last = ast.children[ast.children.length - 1];
  if (last && last.type === 'literalValue') last.meta.value = last.meta.value.replace(/\n$/, '');
  return ast;
}

// evalValue(value, scope): a value of the parser's JSON with its expressions
// ("${…}" strings) evaluated, and its dynamic blocks expanded.
async function evalValue(value, scope) {
  if (typeof value === 'string') {
    if (!value.includes('${') && !value.includes('%{')) return value;
    const result = evalAst(await expressionAst(value), scope);
    return result instanceof Runtime ? result.text : result;
  }
  if (Array.isArray(value)) {
    const out = [];
    for (const item of value) out.push(await evalValue(item, scope));
    return out;
  }
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, item] of Object.entries(value)) {
    if (key !== 'dynamic') out[key] = await evalValue(item, scope);
  }
  for (const [name, blocks] of Object.entries(value.dynamic || {})) {
    for (const block of blocks) {
      const each = await evalValue(block.for_each, scope);
      const entries = Array.isArray(each) ? each.map((v, i) => [i, v]) : Object.entries(each);
      for (const [key, item] of entries) {
        const inner = { ...scope, iterators: { ...scope.iterators, [name]: { key, value: item } } };
        const content = await evalValue(block.content[0], inner);
        out[name] = (out[name] || []).concat([content]);
      }
    }
  }
  return out;
}

// variables(hcl, given): each variable's value, given (NAME=VALUE) or default,
// after its validation blocks.
async function variables(hcl, given) {
  const vars = {};
  for (const [name, [variable]] of Object.entries(hcl.variable || {})) {
    if (name in given) vars[name] = given[name];
    else if ('default' in variable) vars[name] = variable.default;
  }
  for (const name of Object.keys(given)) if (!(name in vars)) fail(`-var ${name}: no such variable`);
  const scope = { vars, iterators: {}, locals: () => fail('a variable cannot use local values') };
  for (const [name, [variable]] of Object.entries(hcl.variable || {})) {
    if (!(name in vars)) continue;
    for (const rule of variable.validation || []) {
      if (!(await evalValue(rule.condition, scope))) fail(`var.${name}: ${rule.error_message}`);
    }
  }
  return vars;
}

async function evaluate(hcl, given) {
  const values = {};
  const scope = { vars: await variables(hcl, given), iterators: {}, locals: () => values };
  // Locals in the order written: each may use those before it.
  for (const [name, value] of Object.entries(Object.assign({}, ...(hcl.locals || [])))) {
    values[name] = await evalValue(value, scope);
  }
  return evalValue(hcl.job, scope);
}

// specErrors(value, type, where): what in one block (the parser's JSON of
// it) the job specification's type does not allow.
function specErrors(value, type, where, spec) {
  const schema = spec[type];
  if (schema.any) return [];
  const errors = [];
  const blocks = schema.blocks || {};
  const labelled = new Set(schema.labelled || []);
  const eachBlock = (name, body, at) => {
    if (labelled.has(name)) {
      for (const [label, instances] of Object.entries(body)) {
        for (const instance of instances) errors.push(...specErrors(instance, blocks[name], `${at} "${label}"`, spec));
      }
    } else {
      for (const instance of [].concat(body)) errors.push(...specErrors(instance, blocks[name], at, spec));
    }
  };
  for (const [key, body] of Object.entries(value)) {
    if (key === 'dynamic') {
      for (const [name, dynamics] of Object.entries(body)) {
        if (!(name in blocks)) { errors.push(`${where}: no block "${name}" here (dynamic)`); continue; }
        for (const dynamic of dynamics) {
          for (const attr of Object.keys(dynamic)) {
            if (!['for_each', 'iterator', 'labels', 'content'].includes(attr)) errors.push(`${where} -> dynamic "${name}": unknown "${attr}"`);
          }
          for (const content of dynamic.content || []) errors.push(...specErrors(content, blocks[name], `${where} -> dynamic "${name}"`, spec));
        }
      }
    } else if ((schema.attrs || []).includes(key)) {
      // an attribute: its value is Nomad's to judge
    } else if (key in blocks) {
      eachBlock(key, body, `${where} -> ${key}`);
    } else {
      errors.push(`${where}: Nomad's job specification has no "${key}" here`);
    }
  }
  return errors;
}

function only(map, what) {
  const names = Object.keys(map || {});
  if (names.length !== 1) fail(`want one ${what}, found ${names.length}`);
  return map[names[0]][0];
}

function taskArgs(job) {
  const task = only(only(only(job, 'job').group, 'group').task, 'task');
  return task.config[0].args.map((arg) => asString(arg, 'args').replace(/\$\{([^}]*)\}/g, (whole, name) => {
    const value = process.env[name.replace(/\./g, '_')];
    if (value === undefined) fail(`${whole}: no value given for it`);
    return value;
  }));
}

function givenVars(pairs) {
  const given = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at < 1) fail(`${pair}: want NAME=VALUE`);
    const text = pair.slice(at + 1);
    try { given[pair.slice(0, at)] = JSON.parse(text); } catch (error) { given[pair.slice(0, at)] = text; }
  }
  return given;
}

async function main() {
  const [what, file, ...pairs] = process.argv.slice(2);
  const hcl = await parse(file, fs.readFileSync(file, 'utf8'));
  if (what === 'json') console.log(JSON.stringify(hcl));
  else if (what === 'job') console.log(JSON.stringify(await evaluate(hcl, givenVars(pairs))));
  else if (what === 'check') {
    const spec = JSON.parse(fs.readFileSync(`${__dirname}/nomad-jobspec.json`, 'utf8'));
    const errors = specErrors(hcl, 'top', file, spec);
    if (errors.length) fail(errors.join('\n'));
  } else if (what === 'args') console.log(taskArgs(await evaluate(hcl, givenVars(pairs))).join('\n'));
  else fail(`unknown request ${what}`);
}

main().catch((error) => {
  console.error(`hcl.js: ${error.message || error}`);
  process.exit(1);
});
