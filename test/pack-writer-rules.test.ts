import t from 'tap'
import { localPathIn, localPathInJson, mayHoldLocalPath, mediaKindOf } from '../src/formats/pack/check/writer-rules.js'
import { seededRandom } from '../src/sim/random.js'

t.test('local paths: the spec\'s five forms, and what is none', async (t) => {
  const paths: [string, string][] = [
    ['/home/alice/pack', '/home/alice/pack'], ['built in /srv/jetcarp/out.png', '/srv/jetcarp/out.png'], ['~/searches/run1', '~/searches/run1'],
    ['C:\\Users\\alice', 'C:\\Users\\alice'], ['d:/data/x', 'd:/data/x'], ['\\\\lab-nas\\packs\\life', '\\\\lab-nas\\packs\\life'],
    ['see file:///tmp/x.json', 'file:///tmp/x.json'], ['FILE://host/x', 'FILE://host/x'], ['{"src":"/x/y"}', '/x/y'], ['(/x/y)', '/x/y'], ['a=/x/y', '/x/y'],
  ]
  for (const [text, path] of paths) t.equal(localPathIn(text), path, text)
  for (const text of ['B3/S23', 'c/4 orthogonal', '2c/5', 'https://example.org/a/b', 'http://x/y', 'a/b/c', '/root', 'x/y/z', 'B3/S23/C4', '10:30', 'ratio 1/2', '']) {
    t.equal(localPathIn(text), null, text)
  }
})

t.test('base64 is no path: an armored signature, and a public key but for its comment', async (t) => {
  // A signature line may start with `/` and hold another: the first ref a test signed had `\n/z6P/ob48...`.
  const signature = '-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAg\n/z6P/ob480v6J0CfrlThd6uS+G6w5hAQ==\n-----END SSH SIGNATURE-----\n'
  t.equal(localPathIn(signature), '/z6P/ob480v6J0CfrlThd6uS+G6w5hAQ==', 'as plain text it would be one')
  t.equal(localPathInJson({ signature }), null, 'as a document\'s signature it is none')
  t.equal(localPathInJson({ key: 'ssh-ed25519 AAAAC3Nz/aC1l/ZDI1NTE5 publisher' }), null, 'a key\'s blob')
  t.same(localPathInJson({ key: 'ssh-ed25519 AAAAC3Nz/aC1l/ZDI1NTE5 made in /home/alice/x' }), { path: '/home/alice/x', at: '.key' }, 'a key\'s comment is text')
  t.same(localPathInJson({ note: `${signature} from /home/alice/y` }), { path: '/z6P/ob480v6J0CfrlThd6uS+G6w5hAQ==', at: '.note' }, 'an armored block inside other text is text')
})

t.test('the byte filter a cell goes through first never passes over a text that holds a local path', async (t) => {
  const rand = seededRandom(5)
  const alphabet = ['/', '\\', '~', ':', ' ', '"', 'a', 'C', 'x', '3', '=', '(', 'f', 'i', 'l', 'e', '\u00a0', 'é']
  let paths = 0
  let wrong = 0
  for (let n = 0; n < 200_000; n++) {
    let text = ''
    for (let k = Math.floor(rand() * 12); k > 0; k--) text += alphabet[Math.floor(rand() * alphabet.length)]
    const bytes = Buffer.from(text, 'utf8')
    if (localPathIn(text) === null) continue
    paths++
    if (!mayHoldLocalPath(bytes, 0, bytes.length)) wrong++
  }
  t.ok(paths > 1000, `${paths} random texts hold a local path`)
  t.equal(wrong, 0, 'the filter passes each of them')
})

t.test('media kinds by their first bytes', async (t) => {
  const of = (hex: string, text = '') => mediaKindOf(Buffer.concat([Buffer.from(hex, 'hex'), Buffer.from(text)]))
  t.equal(of('89504e470d0a1a0a0000000d'), 'png')
  t.equal(mediaKindOf(Buffer.from('GIF89a\x01\x00')), 'gif')
  t.equal(mediaKindOf(Buffer.from('GIF87a\x01\x00')), 'gif')
  t.equal(mediaKindOf(Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ')), 'webp')
  t.equal(mediaKindOf(Buffer.from('RIFF\x10\x00\x00\x00WAVEfmt ')), null, 'another RIFF')
  t.equal(mediaKindOf(Buffer.from('GIF88a')), null)
  t.equal(of('89504e470d0a1a'), null, 'a PNG signature cut short')
  t.equal(mediaKindOf(new Uint8Array(0)), null)
})
