/**
 * Raters' consent, as a publish from the library follows it (pack format 1.0, "Ratings" and "Personal
 * data"): a rater's ratings, name and notes go out only as the rater's recorded consent allows.
 *
 * A rater's consent is, first, the library's own record of it (`pipe pack rater`, Library.recordConsent),
 * and otherwise the latest raters row an imported pack published for that rater: a pack's raters row is
 * a consent recorded by its publisher, which "covers permanent public release". A rater with neither has
 * no recorded consent, and nothing of theirs is published; a rater whose own record is withdrawn gets no
 * new rows and no ratings. A group's ratings go only when every member consented.
 */
import type { Library, RaterConsent } from './library.js'
import { rowText } from './row-text.js'

/** The only consent scope of format 1.0. */
const CONSENT_SCOPE = 'public-permanent'

/** Why a rater's ratings are not published. */
export type Withheld = 'withdrawn' | 'no-consent' | 'member-without-consent'

/** What a publish may write of one rater: nothing, or their ratings (with notes or not) and the raters rows they need. */
export type RaterRelease =
  | { publish: false; why: Withheld }
  | { publish: true; notes: boolean; rows: Record<string, unknown>[] }

/** The raters row of a consent the library recorded itself: named only if they chose it, never with an ORCID (none is recorded). */
export function ownRatersRow(c: RaterConsent): Record<string, unknown> {
  return { rater: c.rater, consent_date: c.consentDate, consent_scope: CONSENT_SCOPE, display_name: c.showName ? c.name : null, orcid: null, members: null, notes: c.notes }
}

/** Each rater's release, decided once per publish from the library's own consents and the raters rows it imported. */
export class ConsentBook {
  private readonly own: Map<string, RaterConsent>
  /** Each rater's latest imported raters row, as a reader takes it: the greatest consent_date, then the greater RFC 8785 text. */
  private readonly imported = new Map<string, { row: Record<string, unknown>; text: Buffer }>()
  private readonly decided = new Map<string, RaterRelease>()

  private constructor(lib: Library) {
    this.own = lib.raterConsents()
  }

  /** Reads the library's consents now (one row a rater is kept), so that deciding needs no query while the caller reads another table. */
  static async read(lib: Library): Promise<ConsentBook> {
    const book = new ConsentBook(lib)
    for await (const e of lib.query('raters')) {
      const row = e.row as Record<string, unknown>
      const rater = String(row.rater)
      const text = Buffer.from(rowText(row))
      const best = book.imported.get(rater)
      if (best === undefined || laterRow(row, text, best.row, best.text)) book.imported.set(rater, { row, text })
    }
    return book
  }

  release(rater: string): RaterRelease {
    let r = this.decided.get(rater)
    if (r === undefined) {
      r = this.decide(rater)
      this.decided.set(rater, r)
    }
    return r
  }

  private decide(rater: string): RaterRelease {
    const own = this.own.get(rater)
    if (own !== undefined) return own.withdrawn ? { publish: false, why: 'withdrawn' } : { publish: true, notes: own.notes, rows: [ownRatersRow(own)] }
    const row = this.imported.get(rater)?.row
    if (row === undefined) return { publish: false, why: 'no-consent' }
    const members = row.members as string[] | null
    if (members === null) return { publish: true, notes: row.notes === true, rows: [row] }
    // Groups do not nest: each member is a single rater, with a row of their own.
    const rows = [row]
    for (const m of members) {
      const member = this.release(m)
      if (!member.publish) return { publish: false, why: 'member-without-consent' }
      rows.push(...member.rows)
    }
    return { publish: true, notes: row.notes === true, rows }
  }
}

/** Whether raters row `a` (RFC 8785 text `aText`) comes after `b`: by consent_date, then by text, UTF-8 bytes. */
function laterRow(a: Record<string, unknown>, aText: Buffer, b: Record<string, unknown>, bText: Buffer): boolean {
  const [da, db] = [String(a.consent_date), String(b.consent_date)]
  return da !== db ? da > db : Buffer.compare(aText, bText) > 0
}
