// The parity reference for the C++ GPT-2 tokenizer: runs the JavaScript
// encoder of the npm package gpt-3-encoder (third_party/npm/gpt-3-encoder,
// fetched by tools/setup.sh) and writes what it says, for
// tokenizer-parity-check to compare with runtime/data/Tokenizer.
//
//   node tokenizer-reference.js PACKAGE_DIR cases CASES.js OUT_DIR
//       writes each hand-written case (CASES.js exports an array of
//       strings) and seeded random strings to OUT_DIR/case_NNNN.txt
//   node tokenizer-reference.js PACKAGE_DIR encode LIST OUT
//       LIST names text files, one per line; OUT gets "path<TAB>ids" lines
//   node tokenizer-reference.js PACKAGE_DIR classes OUT
//       OUT gets one character per code point 0..0x10FFFF: L (\p{L}),
//       N (\p{N}), S (\s) or O, as JavaScript's regex engine sees them
'use strict';
const fs = require('fs');
const path = require('path');

const [pkgDir, mode, ...args] = process.argv.slice(2);
for (const f of ['Encoder.js', 'encoder.json', 'vocab.bpe']) {
  if (!pkgDir || !fs.existsSync(path.join(pkgDir, f))) {
    console.error(`tokenizer-reference: ${path.join(pkgDir || '.', f)} is ` +
                  'missing: run tools/setup.sh (it fetches the npm package ' +
                  'gpt-3-encoder into third_party/npm/gpt-3-encoder)');
    process.exit(1);
  }
}

// Random strings over an alphabet that mixes the pattern's classes, the
// contraction letters, and characters from several scripts, so that piece
// boundaries fall in every combination. A fixed seed keeps them the same.
function randomCases(count) {
  const alphabet = [
    'a', 'e', 's', 't', 'r', 'v', 'm', 'l', 'd', 'S', 'T', 'x', 'Q', '\'',
    ' ', ' ', ' ', '  ', '\n', '\t', '\r\n', '\u00a0', '\u3000',
    '0', '1', '7', '9', '.', ',', '-', '!', '?', '"', '(', ')', '$', '%',
    'é', 'ß', 'Ω', 'ж', 'ש', 'ع', 'क', '中', '文', 'カ', '한', '٣', '½',
    '😀', '👍🏽', '\u0301', '_', '#', '@', '/', '\\',
    'the', ' the', 'ing', 'tion', ' of', 'http', '://', '...', '--',
  ];
  let state = 20240520;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state >>> 8;
  };
  const out = [];
  for (let i = 0; i < count; ++i) {
    const len = 1 + (next() % 40);
    let s = '';
    for (let k = 0; k < len; ++k)
      s += alphabet[next() % alphabet.length];
    out.push(s);
  }
  return out;
}

if (mode === 'cases') {
  const [casesJs, outDir] = args;
  const cases = require(path.resolve(casesJs))
                    .concat(randomCases(2000));
  fs.mkdirSync(outDir, {recursive: true});
  cases.forEach((text, i) => {
    const name = `case_${String(i).padStart(4, '0')}.txt`;
    fs.writeFileSync(path.join(outDir, name), text, 'utf-8');
  });
} else if (mode === 'encode') {
  const {encode} = require(path.resolve(pkgDir, 'index.js'));
  const [list, out] = args;
  const files = fs.readFileSync(list, 'utf-8').split('\n').filter(Boolean);
  const lines = files.map(
      f => f + '\t' + encode(fs.readFileSync(f, 'utf-8')).join(' '));
  fs.writeFileSync(out, lines.join('\n') + '\n');
} else if (mode === 'classes') {
  const [out] = args;
  const letter = /^\p{L}$/u, number = /^\p{N}$/u, space = /^\s$/u;
  const buf = Buffer.alloc(0x110000);
  for (let cp = 0; cp < 0x110000; ++cp) {
    // Lone surrogates are never characters of UTF-8 text.
    const c = cp >= 0xd800 && cp <= 0xdfff ? '' : String.fromCodePoint(cp);
    buf[cp] = (letter.test(c) ? 'L' : number.test(c) ? 'N'
               : space.test(c) ? 'S' : 'O').charCodeAt(0);
  }
  fs.writeFileSync(out, buf);
} else {
  console.error(`tokenizer-reference: unknown mode '${mode}', expected ` +
                'cases, encode or classes');
  process.exit(2);
}
