// Used by deploy_files.sh, run with node and HashiCorp's HCL parser
// (@cdktf/hcl2json, the Go HCL library built to WebAssembly) on NODE_PATH:
//   node hcl.js json FILE   prints FILE as the parser's JSON
//   node hcl.js args FILE   prints the args of FILE's one task, one a line, as
//                           Nomad would pass them with every variable at its
//                           default: ${var.X} and concat([...], var.X) are
//                           evaluated, and the runtime values ${node.unique.id},
//                           ${node.unique.name}, ${NOMAD_ALLOC_DIR} and
//                           ${NOMAD_TASK_DIR} come from the environment variables
//                           of those names (dots as underscores).
// Exits 1, saying why, on a parse error or an interpolation it cannot tell.
'use strict';
const fs = require('fs');
const { parse } = require('@cdktf/hcl2json');

function only(map, what) {
  const names = Object.keys(map || {});
  if (names.length !== 1) throw new Error(`want one ${what}, found ${names.length}`);
  return map[names[0]][0];
}

function taskArgs(hcl) {
  const defaults = {};
  for (const [name, [variable]] of Object.entries(hcl.variable || {})) defaults[name] = variable.default;
  const job = only(hcl.job, 'job');
  const task = only(only(job.group, 'group').task, 'task');
  let args = task.config[0].args;
  if (typeof args === 'string') {
    const concat = /^\$\{concat\((\[[^\]]*\]),\s*var\.(\w+)\)\}$/s.exec(args);
    if (!concat) throw new Error(`args: cannot evaluate ${args}`);
    args = JSON.parse(concat[1]).concat(defaults[concat[2]]);
  }
  return args.map((arg) => arg.replace(/\$\{([^}]*)\}/g, (whole, name) => {
    if (name.startsWith('var.')) {
      const value = defaults[name.slice(4)];
      if (value === undefined) throw new Error(`${whole}: the variable has no default`);
      return String(value);
    }
    const value = process.env[name.replace(/\./g, '_')];
    if (value === undefined) throw new Error(`${whole}: no value given for it`);
    return value;
  }));
}

async function main() {
  const [what, file] = process.argv.slice(2);
  const hcl = await parse(file, fs.readFileSync(file, 'utf8'));
  if (what === 'json') console.log(JSON.stringify(hcl));
  else if (what === 'args') console.log(taskArgs(hcl).join('\n'));
  else throw new Error(`unknown request ${what}`);
}

main().catch((error) => {
  console.error(`hcl.js: ${error.message || error}`);
  process.exit(1);
});
