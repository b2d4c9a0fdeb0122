// A tiny XML reader for the SVG tests: checks the writer's output is well formed without a dependency.
interface Element {
  readonly name: string;
  readonly attrs: Record<string, string>;
  readonly children: Element[];
  text: string;
}

/** A tiny XML reader for what the writer emits: tags balance, attributes quoted, entities known. */
export function parseXml(xml: string): Element {
  const body = xml.replace(/^<\?xml[^?]*\?>\s*/, '');
  const root: Element = { name: '#root', attrs: {}, children: [], text: '' };
  const stack: Element[] = [root];
  const token = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let m: RegExpExecArray | null;
  let pos = 0;
  while ((m = token.exec(body)) !== null) {
    pos = token.lastIndex;
    const top = stack[stack.length - 1]!;
    if (m[5] !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos);)/.test(m[5])) throw new Error(`bad entity in text ${JSON.stringify(m[5])}`);
      top.text += m[5];
      continue;
    }
    const [, close, name = '', attrText = '', selfClose] = m;
    if (close === '/') {
      if (top.name !== name) throw new Error(`</${name}> closes <${top.name}>`);
      stack.pop();
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of attrText.matchAll(/([\w:-]+)="([^"]*)"/g)) attrs[a[1]!] = a[2]!;
    const el: Element = { name, attrs, children: [], text: '' };
    top.children.push(el);
    if (selfClose !== '/') stack.push(el);
  }
  if (pos !== body.length) throw new Error(`unparsed XML at ${pos}: ${body.slice(pos, pos + 40)}`);
  if (stack.length !== 1) throw new Error(`unclosed <${stack[stack.length - 1]!.name}>`);
  return root;
}

export function findAll(el: Element, name: string): Element[] {
  return el.children.flatMap((c) => [...(c.name === name ? [c] : []), ...findAll(c, name)]);
}
