// A strict little checker for the SVG the charts emit: every tag closes in order, attributes are
// quoted, and text holds no raw '<' or stray '&'. Enough to catch broken string building.

const ENTITY = /^&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/;
const TAG = /^<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>/;

export function checkWellFormed(xml: string): { root: string; elements: number } {
  const stack: string[] = [];
  let root = '';
  let elements = 0;
  let i = 0;
  while (i < xml.length) {
    const c = xml[i]!;
    if (c === '<') {
      const match = TAG.exec(xml.slice(i));
      if (!match) throw new Error(`malformed tag at ${i}: ${xml.slice(i, i + 40)}`);
      const [whole, closing, name, attrs, selfClosing] = match;
      checkEntities(attrs!, i);
      if (closing) {
        const open = stack.pop();
        if (open !== name) throw new Error(`</${name}> at ${i} closes <${open}>`);
      } else {
        if (stack.length === 0 && root) throw new Error(`second root element <${name}> at ${i}`);
        if (!root) root = name!;
        elements++;
        if (!selfClosing) stack.push(name!);
      }
      i += whole.length;
    } else {
      if (c === '&' && !ENTITY.test(xml.slice(i))) throw new Error(`stray & at ${i}`);
      if (c === '>') throw new Error(`stray > at ${i}`);
      if (stack.length === 0 && !/\s/.test(c)) throw new Error(`text outside the root at ${i}`);
      i++;
    }
  }
  if (stack.length > 0) throw new Error(`unclosed <${stack.join('>, <')}>`);
  return { root, elements };
}

function checkEntities(text: string, at: number): void {
  for (let j = text.indexOf('&'); j >= 0; j = text.indexOf('&', j + 1)) {
    if (!ENTITY.test(text.slice(j))) throw new Error(`stray & in attributes at ${at + j}`);
  }
}

/** Text content with entities decoded, for "does the chart mention this series" checks. */
export function textContent(xml: string): string {
  return xml
    .replace(/<[^>]*>/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}
