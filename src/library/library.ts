/**
 * The pack library: one SQLite database (better-sqlite3) of what imported packs hold, and a folder of
 * content-addressed objects beside it (docs/library.md). An import changes it in one transaction, so a
 * refused pack, a crash or a full disk leaves it as it was. Revoked keys are kept for good, and a
 * retraction flags a record without deleting the user's copy.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, open, rename, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import Database from 'better-sqlite3'
import { fsyncDir, writeFully } from '../core/atomic-write.js'
import { PipeError, UsageError } from '../core/errors.js'
import { openRegularFile } from '../core/input-file.js'
import { SHA256_NAME } from '../codec/hash.js'
import { detailProblem } from '../formats/pack/keys/publisher-key.js'
import { openPart, PartReadError, type PackPart } from '../formats/pack/tables/parquet-read.js'
import { PACK_TABLES } from '../formats/pack/tables/table-schemas.js'
import { rowText } from './row-text.js'

/** The schema this build writes; each step of MIGRATIONS takes a database one version up. */
export const LIBRARY_SCHEMA_VERSION = 5

export const LIBRARY_CODES = {
  /** A database made by a newer pipe: its schema is past what this build knows. */
  newer: 'library.schema-newer',
  /** A file that is not a pipe library (another SQLite database, or not SQLite at all). */
  notALibrary: 'library.not-a-library',
  /** A table `query` does not know. */
  unknownTable: 'library.unknown-table',
  /** An object whose bytes are not its name's. */
  objectHash: 'library.object-hash-mismatch',
  /** A rater's name the library cannot keep (empty, several lines, or too long). */
  raterName: 'library.rater-name-invalid',
  /** A withdrawal for a name the library has no rater of. */
  noRater: 'library.no-such-rater',
  /** A part object the library holds a fact in that no longer reads as its table's part. */
  partUnreadable: 'library.part-unreadable',
} as const

/** The pack tables of facts (one row per content id, whoever publishes it) and of events (rows under their publisher). */
export const FACT_TABLES = ['tilings', 'rules', 'patterns', 'ants', 'quickstart', 'aliases'] as const
export const EVENT_TABLES = ['verifications', 'sightings', 'provenance', 'annotations', 'media', 'ratings', 'raters', 'score_models'] as const
export type FactTable = (typeof FACT_TABLES)[number]
export type EventTable = (typeof EVENT_TABLES)[number]

/**
 * Version 1. Rows are kept as the RFC 8785 text of the pack's row (`row`), keyed as the pack keys them:
 * a fact by its table's content id, an event by its publisher and its sort columns.
 */
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE library_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
  CREATE TABLE pack_imports (
    id INTEGER PRIMARY KEY,
    manifest TEXT NOT NULL,
    publisher TEXT NOT NULL,
    feed TEXT NOT NULL,
    source TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    facts_added INTEGER NOT NULL,
    events_added INTEGER NOT NULL,
    objects_added INTEGER NOT NULL,
    retractions_added INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX pack_imports_manifest ON pack_imports (manifest);
  CREATE TABLE facts (
    table_name TEXT NOT NULL,
    id TEXT NOT NULL,
    row TEXT NOT NULL,
    import_id INTEGER NOT NULL REFERENCES pack_imports (id),
    needs_reverify INTEGER NOT NULL DEFAULT 0 CHECK (needs_reverify IN (0, 1)),
    PRIMARY KEY (table_name, id)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE events (
    table_name TEXT NOT NULL,
    publisher TEXT NOT NULL,
    key TEXT NOT NULL,
    row TEXT NOT NULL,
    import_id INTEGER NOT NULL REFERENCES pack_imports (id),
    PRIMARY KEY (table_name, publisher, key)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE objects (
    hash TEXT PRIMARY KEY,
    ext TEXT NOT NULL CHECK (ext IN ('parquet', 'png', 'gif', 'webp')),
    bytes INTEGER NOT NULL,
    import_id INTEGER NOT NULL REFERENCES pack_imports (id)
  ) STRICT;
  CREATE TABLE pack_retractions (
    target TEXT NOT NULL,
    publisher TEXT NOT NULL,
    manifest TEXT NOT NULL,
    import_id INTEGER NOT NULL REFERENCES pack_imports (id),
    PRIMARY KEY (target, publisher)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE pack_revoked (
    fingerprint TEXT PRIMARY KEY,
    revoked_by TEXT NOT NULL,
    publisher TEXT NOT NULL,
    seen_in TEXT NOT NULL,
    first_seen TEXT NOT NULL
  ) STRICT;
  CREATE TABLE pack_follows (
    publisher TEXT NOT NULL,
    feed TEXT NOT NULL,
    seq INTEGER NOT NULL,
    manifest TEXT NOT NULL,
    source TEXT NOT NULL,
    updated TEXT NOT NULL,
    PRIMARY KEY (publisher, feed)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE pack_reverify (
    import_id INTEGER NOT NULL REFERENCES pack_imports (id),
    table_name TEXT NOT NULL,
    id TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('confirmed', 'failed', 'unchecked')),
    detail TEXT NOT NULL,
    PRIMARY KEY (import_id, table_name, id)
  ) STRICT, WITHOUT ROWID;
  `,
  // Version 2: the library's own raters (pipe pack rater). A rater's id is made once, when the name is
  // first recorded, and kept for good; each recording of consent is a row of its history, never changed,
  // so the consent a publish followed stays known. The latest row (by seq) is the rater's consent now.
  `
  CREATE TABLE library_raters (
    name TEXT PRIMARY KEY,
    rater TEXT NOT NULL UNIQUE CHECK (rater GLOB 'rater-${'[0-9a-f]'.repeat(16)}'),
    made TEXT NOT NULL
  ) STRICT;
  CREATE TABLE library_rater_consents (
    rater TEXT NOT NULL REFERENCES library_raters (rater),
    seq INTEGER NOT NULL,
    consent_date TEXT NOT NULL,
    show_name INTEGER NOT NULL CHECK (show_name IN (0, 1)),
    notes INTEGER NOT NULL CHECK (notes IN (0, 1)),
    withdrawn INTEGER NOT NULL CHECK (withdrawn IN (0, 1)),
    PRIMARY KEY (rater, seq)
  ) STRICT, WITHOUT ROWID;
  `,
  // Version 3: an event is kept by its sort key and its row's digest (eventKey): rows of one sort key
  // were one row, and a later one was dropped.
  `
  UPDATE events SET key = key || char(31) || pipe_row_digest(row);
  `,
  // Version 4: facts and events as rowid tables, their keys a unique index. A row of a WITHOUT ROWID
  // table is stored in an index b-tree, which keeps at most about a quarter of a page inline: a pattern's
  // row (about 950 bytes) went to overflow pages mostly empty, and a million of them took 3 GB for 300 MB
  // of rows. A rowid table keeps rows of up to nearly a page inline.
  `
  CREATE TABLE facts_rowid (
    table_name TEXT NOT NULL,
    id TEXT NOT NULL,
    row TEXT NOT NULL,
    import_id INTEGER NOT NULL REFERENCES pack_imports (id),
    needs_reverify INTEGER NOT NULL DEFAULT 0 CHECK (needs_reverify IN (0, 1))
  ) STRICT;
  INSERT INTO facts_rowid (table_name, id, row, import_id, needs_reverify) SELECT table_name, id, row, import_id, needs_reverify FROM facts;
  DROP TABLE facts;
  ALTER TABLE facts_rowid RENAME TO facts;
  CREATE UNIQUE INDEX facts_key ON facts (table_name, id);
  CREATE TABLE events_rowid (
    table_name TEXT NOT NULL,
    publisher TEXT NOT NULL,
    key TEXT NOT NULL,
    row TEXT NOT NULL,
    import_id INTEGER NOT NULL REFERENCES pack_imports (id)
  ) STRICT;
  INSERT INTO events_rowid (table_name, publisher, key, row, import_id) SELECT table_name, publisher, key, row, import_id FROM events;
  DROP TABLE events;
  ALTER TABLE events_rowid RENAME TO events;
  CREATE UNIQUE INDEX events_key ON events (table_name, publisher, key);
  `,
  // Version 5: a fact imported from now on is a reference to its row in the part it came in, a library
  // object: the text rows of facts took a million patterns to 1.2 GB and most of an import's time. The text
  // rows of libraries made before stay in facts, and stay readable; an id is in one of the two tables. A
  // part is named by a number of the library's: a reference is then some 50 bytes, and a million of them
  // fit the page cache while they are inserted (with the part's hash in each, 4.9 s against 2.3 s).
  `
  CREATE TABLE fact_parts (
    id INTEGER PRIMARY KEY,
    object TEXT NOT NULL UNIQUE
  ) STRICT;
  CREATE TABLE fact_refs (
    table_name TEXT NOT NULL,
    id TEXT NOT NULL,
    part INTEGER NOT NULL REFERENCES fact_parts (id),
    part_row INTEGER NOT NULL CHECK (part_row >= 0),
    import_id INTEGER NOT NULL REFERENCES pack_imports (id),
    needs_reverify INTEGER NOT NULL DEFAULT 0 CHECK (needs_reverify IN (0, 1)),
    PRIMARY KEY (table_name, id)
  ) STRICT, WITHOUT ROWID;
  `,
]

/** What a rater chose when their consent was recorded (pipe pack rater). */
export interface ConsentChoice {
  /** Be named (display_name) in what is published. */
  showName: boolean
  /** Share the notes of their ratings. */
  notes: boolean
  /** Withdraw consent altogether: nothing more of theirs is published. */
  withdrawn: boolean
}

/** A rater of the library's own, with their consent as last recorded. */
export interface RaterConsent extends ConsentChoice {
  name: string
  rater: string
  /** When this consent was recorded: a pack time, later than any recorded before for the rater. */
  consentDate: string
}

/** The latest consent of each of the library's own raters. */
const LATEST_CONSENTS = `SELECT r.name, r.rater, c.consent_date, c.show_name, c.notes, c.withdrawn
  FROM library_raters r JOIN library_rater_consents c ON c.rater = r.rater
  WHERE c.seq = (SELECT max(seq) FROM library_rater_consents WHERE rater = r.rater)`

export interface ImportRecord {
  manifest: string
  publisher: string
  feed: string
  source: string
  started: string
  finished: string
}

export interface ImportCounts {
  factsAdded: number
  eventsAdded: number
  objectsAdded: number
  retractionsAdded: number
}

/**
 * Where the library's row of a fact is: a row of a part object (`ownImport`: put there by the change
 * asking, from another part of the same pack), or its text (a library made before schema 5).
 */
export type FactPlace = { part: string; partRow: number; ownImport: boolean } | { text: string }

/** What one transaction may do to the library; see Library.change. */
export interface LibraryChange {
  readonly importId: number
  /**
   * A fact as row `partRow` of the part object `part` (stored before through `object`): 'added', 'same'
   * (the library holds that very row), or 'elsewhere': the library's row stands, at `held`, for the caller
   * to compare.
   */
  factRef(table: FactTable, id: string, part: string, partRow: number): { kept: 'added' | 'same' } | { kept: 'elsewhere'; held: FactPlace }
  /**
   * An event row under its publisher: 'added', or 'same' when that very row is there already. Events are
   * kept by their sort key and their row's digest: sort columns are an order, not an identity (a rater's
   * later consent, a later count of sightings, share theirs with the rows before them).
   */
  event(table: EventTable, publisher: string, sortKey: string, row: string): 'added' | 'same'
  /** An object into the library's folder (its bytes, or a file's, streamed), checked against its name before it is named. */
  object(hash: string, ext: 'parquet' | 'png' | 'gif' | 'webp', source: Uint8Array | { path: string }): Promise<'added' | 'same'>
  retract(target: string, publisher: string, manifest: string): 'added' | 'same'
  /** A key revoked for good (by itself or a successor, `revokedBy`): no later import can undo it. */
  revoke(fingerprint: string, revokedBy: string, publisher: string, seenIn: string, at: string): void
  flagReverify(table: FactTable, id: string): void
  reverifyResult(table: FactTable, id: string, outcome: 'confirmed' | 'failed' | 'unchecked', detail: string): void
  follow(publisher: string, feed: string, seq: number, manifest: string, source: string, at: string): void
}

export interface LibraryStats {
  schema: number
  facts: Record<string, number>
  events: Record<string, number>
  objects: number
  objectBytes: number
  retractions: number
  revokedKeys: number
  imports: number
  needsReverify: number
  follows: { publisher: string; feed: string; seq: number; manifest: string }[]
}


export class Library {
  /** Temporary tables made by whole-table queries, each named by its turn so that queries may nest. */
  private scratchTables = 0

  private constructor(private readonly db: Database.Database, readonly path: string) {}

  /** The objects' folder: `<db>.objects/sha256/<aa>/<hex>.<ext>`. */
  get objectsDir(): string {
    return `${this.path}.objects`
  }

  /**
   * Opens (making it when `create`) the library at `path`, taking its schema up to this build's. With
   * `migrate` false an older library is left at its schema, to be read, until its first change takes it
   * up in the change's own transaction: an import refused after the library was read leaves it untouched.
   */
  static open(path: string, opts: { create?: boolean; migrate?: boolean } = {}): Library {
    let db: Database.Database
    try {
      db = new Database(path, { fileMustExist: !opts.create })
    } catch (err) {
      throw new UsageError('env.enoent', `cannot open the library: ${(err as Error).message}`, { location: { file: path } })
    }
    try {
      db.pragma('journal_mode = WAL')
      db.pragma('synchronous = FULL')
      db.pragma('foreign_keys = ON')
      // 64 MiB of pages: an import's inserts land all over the unique indexes, which the default 2 MiB misses.
      db.pragma('cache_size = -65536')
      checkSchema(db, path)
      db.function('pipe_row_digest', { deterministic: true }, (row) => rowDigest(String(row)))
      if (opts.migrate ?? true) migrate(db)
    } catch (err) {
      db.close()
      if ((err as { code?: string }).code === 'SQLITE_NOTADB') throw new PipeError(LIBRARY_CODES.notALibrary, `${path} is not a SQLite database, so no pipe library`, { exitCode: 2, location: { file: path } })
      throw err
    }
    return new Library(db, path)
  }

  close(): void {
    this.db.close()
  }

  get schemaVersion(): number {
    return schemaVersionOf(this.db)
  }

  /**
   * Runs `change` in one transaction under a new import record: everything it did is kept together with
   * the record, or (when it throws) nothing is. Objects are written into the folder before the commit, and
   * removed when the change throws; one a killed process left is named by its hash and harms nothing.
   */
  async change(record: ImportRecord, change: (c: LibraryChange) => Promise<void>): Promise<ImportCounts & { importId: number }> {
    const db = this.db
    // Objects this change named, removed when it rolls back: under the write lock no other change can have named them.
    const written: string[] = []
    db.exec('BEGIN IMMEDIATE')
    try {
      // A library opened without migrating is taken up here, so that the steps commit with the change or not at all.
      for (let v = schemaVersionOf(db); v < LIBRARY_SCHEMA_VERSION; v++) migrationStep(db, v)
      const importId = Number(db.prepare(`INSERT INTO pack_imports (manifest, publisher, feed, source, started, finished, facts_added, events_added, objects_added, retractions_added)
        VALUES (?, ?, ?, ?, ?, ?, 0, 0, 0, 0)`).run(record.manifest, record.publisher, record.feed, record.source, record.started, record.finished).lastInsertRowid)
      const counts: ImportCounts = { factsAdded: 0, eventsAdded: 0, objectsAdded: 0, retractionsAdded: 0 }
      const putFactRef = db.prepare('INSERT OR IGNORE INTO fact_refs (table_name, id, part, part_row, import_id) VALUES (?, ?, ?, ?, ?)')
      const heldRef = db.prepare(`${HELD_REF.replace('SELECT', 'SELECT r.import_id AS importId,')} WHERE r.table_name = ? AND r.id = ?`)
      const partNumber = db.prepare('INSERT INTO fact_parts (object) VALUES (?) ON CONFLICT (object) DO UPDATE SET object = excluded.object RETURNING id').pluck()
      const partNumbers = new Map<string, number>()
      const heldText = db.prepare('SELECT row FROM facts WHERE table_name = ? AND id = ?').pluck()
      // A library made before schema 5 may hold a fact as text: then an id new to fact_refs is looked for there too.
      const textFacts = db.prepare('SELECT 1 FROM facts LIMIT 1').pluck().get() !== undefined
      const putEvent = db.prepare('INSERT OR IGNORE INTO events (table_name, publisher, key, row, import_id) VALUES (?, ?, ?, ?, ?)')
      const hasObject = db.prepare('SELECT 1 FROM objects WHERE hash = ?').pluck()
      const putObject = db.prepare('INSERT INTO objects (hash, ext, bytes, import_id) VALUES (?, ?, ?, ?)')
      // Prepared once a change: flagReverify and reverifyResult run once a row on a large import.
      const flag = db.prepare('UPDATE fact_refs SET needs_reverify = 1 WHERE table_name = ? AND id = ?')
      const putReverify = db.prepare('INSERT OR REPLACE INTO pack_reverify (import_id, table_name, id, outcome, detail) VALUES (?, ?, ?, ?, ?)')
      const putRetraction = db.prepare('INSERT OR IGNORE INTO pack_retractions (target, publisher, manifest, import_id) VALUES (?, ?, ?, ?)')
      const lib = this
      await change({
        importId,
        factRef(table, id, part, partRow) {
          const text = textFacts ? (heldText.get(table, id) as string | undefined) : undefined
          if (text !== undefined) return { kept: 'elsewhere', held: { text } }
          // Most rows of an import are new: insert first, and read where the held row is only when there is one.
          let number = partNumbers.get(part)
          if (number === undefined) partNumbers.set(part, (number = partNumber.get(part) as number))
          if (putFactRef.run(table, id, number, partRow, importId).changes === 0) {
            const held = heldRef.get(table, id) as { part: string; partRow: number; importId: number }
            if (held.part === part && held.partRow === partRow) return { kept: 'same' }
            return { kept: 'elsewhere', held: { part: held.part, partRow: held.partRow, ownImport: held.importId === importId } }
          }
          counts.factsAdded++
          return { kept: 'added' }
        },
        event(table, publisher, sortKey, row) {
          if (putEvent.run(table, publisher, eventKey(sortKey, row), row, importId).changes === 0) return 'same'
          counts.eventsAdded++
          return 'added'
        },
        async object(hash, ext, source) {
          const hex = SHA256_NAME.exec(hash)?.[1]
          if (hex === undefined) throw new PipeError(LIBRARY_CODES.objectHash, `${JSON.stringify(hash)} is no sha256: name; the object is not stored`)
          if (hasObject.get(hash) !== undefined) return 'same'
          written.push(lib.objectFile(hash, ext))
          const bytes = await lib.writeObjectFile(hex, ext, source)
          putObject.run(hash, ext, bytes, importId)
          counts.objectsAdded++
          return 'added'
        },
        retract(target, publisher, manifest) {
          if (putRetraction.run(target, publisher, manifest, importId).changes === 0) return 'same'
          counts.retractionsAdded++
          return 'added'
        },
        revoke(fingerprint, revokedBy, publisher, seenIn, at) {
          db.prepare('INSERT OR IGNORE INTO pack_revoked (fingerprint, revoked_by, publisher, seen_in, first_seen) VALUES (?, ?, ?, ?, ?)').run(fingerprint, revokedBy, publisher, seenIn, at)
        },
        flagReverify(table, id) {
          flag.run(table, id)
        },
        reverifyResult(table, id, outcome, detail) {
          putReverify.run(importId, table, id, outcome, detail)
        },
        follow(publisher, feed, seq, manifest, source, at) {
          db.prepare(`INSERT INTO pack_follows (publisher, feed, seq, manifest, source, updated) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (publisher, feed) DO UPDATE SET seq = excluded.seq, manifest = excluded.manifest, source = excluded.source, updated = excluded.updated`).run(publisher, feed, seq, manifest, source, at)
        },
      })
      db.prepare('UPDATE pack_imports SET facts_added = ?, events_added = ?, objects_added = ?, retractions_added = ? WHERE id = ?')
        .run(counts.factsAdded, counts.eventsAdded, counts.objectsAdded, counts.retractionsAdded, importId)
      db.exec('COMMIT')
      return { ...counts, importId }
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK')
      await Promise.all(written.map((path) => rm(path, { force: true }).catch(() => undefined)))
      throw err
    }
  }

  /** Every revocation the library has seen, as the key chain takes them (knownRevocations). */
  revocations(): { fingerprint: string; revokedBy: string }[] {
    return this.db.prepare('SELECT fingerprint, revoked_by AS revokedBy FROM pack_revoked ORDER BY fingerprint').all() as { fingerprint: string; revokedBy: string }[]
  }

  /** Whether an import of this manifest was committed (pack_imports, by its index). */
  hasImported(manifest: string): boolean {
    return this.db.prepare('SELECT 1 FROM pack_imports WHERE manifest = ?').pluck().get(manifest) !== undefined
  }

  isRevoked(fingerprint: string): boolean {
    return this.db.prepare('SELECT 1 FROM pack_revoked WHERE fingerprint = ?').pluck().get(fingerprint) !== undefined
  }

  /**
   * Records a rater's consent (pipe pack rater) in one transaction. The first recording of a name makes its
   * pseudonymous id, `rater-` and 16 random hex digits, kept for good; each recording adds a row to the
   * rater's history. Its consent_date is `at`, or one second past the rater's last one when `at` is not later,
   * so that the latest consent is always the one a reader takes (the greatest consent_date).
   */
  recordConsent(name: string, choice: ConsentChoice, at: string): RaterConsent & { made: boolean } {
    const problem = name === '' ? 'a name is not empty' : detailProblem('name', name)
    if (problem !== undefined) throw new UsageError(LIBRARY_CODES.raterName, `rater name ${JSON.stringify(name)}: ${problem}`, { location: { field: 'name' } })
    const db = this.db
    return db.transaction(() => {
      let rater = db.prepare('SELECT rater FROM library_raters WHERE name = ?').pluck().get(name) as string | undefined
      const made = rater === undefined
      if (made && choice.withdrawn) throw new UsageError(LIBRARY_CODES.noRater, `no rater named ${JSON.stringify(name)} has consented, so there is no consent to withdraw`, { location: { field: 'name' } })
      if (rater === undefined) {
        rater = `rater-${randomBytes(8).toString('hex')}`
        db.prepare('INSERT INTO library_raters (name, rater, made) VALUES (?, ?, ?)').run(name, rater, at)
      }
      const last = db.prepare('SELECT seq, consent_date AS date FROM library_rater_consents WHERE rater = ? ORDER BY seq DESC LIMIT 1').get(rater) as { seq: number; date: string } | undefined
      const consentDate = last === undefined || at > last.date ? at : secondAfter(last.date)
      db.prepare('INSERT INTO library_rater_consents (rater, seq, consent_date, show_name, notes, withdrawn) VALUES (?, ?, ?, ?, ?, ?)')
        .run(rater, (last?.seq ?? 0) + 1, consentDate, Number(choice.showName), Number(choice.notes), Number(choice.withdrawn))
      return { name, rater, consentDate, ...choice, made }
    }).immediate()
  }

  /** The latest consent of each of the library's own raters, by rater id. */
  raterConsents(): Map<string, RaterConsent> {
    const rows = this.db.prepare(LATEST_CONSENTS).all() as { name: string; rater: string; consent_date: string; show_name: number; notes: number; withdrawn: number }[]
    return new Map(rows.map((r) => [r.rater, { name: r.name, rater: r.rater, consentDate: r.consent_date, showName: r.show_name === 1, notes: r.notes === 1, withdrawn: r.withdrawn === 1 }]))
  }

  /** The file of an object the library holds: `<db>.objects/sha256/<aa>/<hex>.<ext>`. */
  objectFile(hash: string, ext: string): string {
    const hex = SHA256_NAME.exec(hash)?.[1]
    if (hex === undefined) throw new PipeError(LIBRARY_CODES.objectHash, `${JSON.stringify(hash)} is no sha256: name`)
    return join(this.objectsDir, 'sha256', hex.slice(0, 2), `${hex}.${ext}`)
  }

  /** The last version accepted from a feed, or undefined when it is not followed. */
  following(publisher: string, feed: string): { seq: number; manifest: string } | undefined {
    return this.db.prepare('SELECT seq, manifest FROM pack_follows WHERE publisher = ? AND feed = ?').get(publisher, feed) as { seq: number; manifest: string } | undefined
  }

  stats(): LibraryStats {
    const db = this.db
    const byTable = (sql: string) => Object.fromEntries((db.prepare(sql).all() as { t: string; n: number }[]).map((r) => [r.t, r.n]))
    const objects = db.prepare('SELECT count(*) AS n, coalesce(sum(bytes), 0) AS b FROM objects').get() as { n: number; b: number }
    const count = (table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number
    return {
      schema: this.schemaVersion,
      facts: { ...Object.fromEntries(FACT_TABLES.map((t) => [t, 0])), ...byTable(`SELECT table_name AS t, count(*) AS n FROM ${this.factKeys()} GROUP BY table_name`) },
      events: { ...Object.fromEntries(EVENT_TABLES.map((t) => [t, 0])), ...byTable('SELECT table_name AS t, count(*) AS n FROM events GROUP BY table_name') },
      objects: objects.n,
      objectBytes: objects.b,
      retractions: count('pack_retractions'),
      revokedKeys: count('pack_revoked'),
      imports: count('pack_imports'),
      needsReverify: db.prepare(`SELECT count(*) FROM ${this.factKeys()} WHERE needs_reverify = 1`).pluck().get() as number,
      follows: db.prepare('SELECT publisher, feed, seq, manifest FROM pack_follows ORDER BY publisher, feed').all() as LibraryStats['follows'],
    }
  }

  /** Whether the library holds a fact of this id (as a part's row, or as text). */
  hasFact(table: FactTable, id: string): boolean {
    return this.db.prepare(`SELECT 1 FROM ${this.factKeys()} WHERE table_name = ? AND id = ?`).pluck().get(table, id) !== undefined
  }

  /**
   * Every fact's (table_name, id, needs_reverify, import_id), as SQL: the text rows, and the references
   * from schema 5 on (a library read before its import takes it up has none).
   */
  private factKeys(): string {
    const text = 'SELECT table_name, id, needs_reverify, import_id FROM facts'
    return schemaVersionOf(this.db) < REFERENCES_SCHEMA ? `(${text})` : `(${text} UNION ALL SELECT table_name, id, needs_reverify, import_id FROM fact_refs)`
  }

  /** The RFC 8785 text of the fact of this id, read from its part when it is kept as a reference; undefined when the library lacks it. */
  async factText(table: FactTable, id: string): Promise<string | undefined> {
    const text = this.db.prepare('SELECT row FROM facts WHERE table_name = ? AND id = ?').pluck().get(table, id) as string | undefined
    if (text !== undefined || schemaVersionOf(this.db) < REFERENCES_SCHEMA) return text
    const ref = this.db.prepare(`${HELD_REF} WHERE r.table_name = ? AND r.id = ?`).get(table, id) as { part: string; partRow: number } | undefined
    if (ref === undefined) return undefined
    const reader = this.partRows(table)
    try {
      return await reader.text(ref.part, ref.partRow)
    } finally {
      await reader.close()
    }
  }

  /** A reader of rows of the library's parts of `table`, as RFC 8785 text (PartRowTexts); close it after. */
  partRows(table: FactTable): PartRowTexts {
    return new PartRowTexts((part) => this.objectFile(part, 'parquet'), table)
  }

  /**
   * The rows of one pack table (a fact table by content id, an event table under every publisher), or of
   * one of the library's own (pack_imports, pack_retractions, pack_revoked, pack_follows, pack_reverify),
   * in key order; with `id`, the fact with that id, or the events whose key starts with it. Rows are read
   * a page at a time, so the caller may use the library between them.
   */
  async *query(table: string, id?: string): AsyncGenerator<Record<string, unknown>> {
    const db = this.db
    if ((FACT_TABLES as readonly string[]).includes(table)) {
      yield* id === undefined ? this.factsInIdOrder(table as FactTable) : this.factById(table as FactTable, id)
      return
    }
    if ((EVENT_TABLES as readonly string[]).includes(table)) {
      const page = id === undefined
        ? db.prepare('SELECT publisher, key, row, import_id FROM events WHERE table_name = ? AND (publisher, key) > (?, ?) ORDER BY publisher, key LIMIT ?')
        : db.prepare("SELECT publisher, key, row, import_id FROM events WHERE table_name = ? AND (publisher, key) > (?, ?) AND (key = ? OR substr(key, 1, length(?) + 1) = ? || char(31)) ORDER BY publisher, key LIMIT ?")
      for (let after = ['', '']; ;) {
        const rows = (id === undefined ? page.all(table, ...after, QUERY_PAGE) : page.all(table, ...after, id, id, id, QUERY_PAGE)) as { publisher: string; key: string; row: string; import_id: number }[]
        for (const r of rows) {
          const key = r.key.split('\u001f')
          yield { publisher: r.publisher, key: key.slice(0, -1), digest: key.at(-1), row: JSON.parse(r.row) as unknown, import_id: r.import_id }
        }
        if (rows.length < QUERY_PAGE) return
        after = [rows.at(-1)!.publisher, rows.at(-1)!.key]
      }
    }
    const own: Record<string, string> = {
      pack_imports: 'SELECT * FROM pack_imports ORDER BY id', pack_retractions: 'SELECT * FROM pack_retractions ORDER BY target, publisher',
      pack_revoked: 'SELECT * FROM pack_revoked ORDER BY fingerprint', pack_follows: 'SELECT * FROM pack_follows ORDER BY publisher, feed',
      pack_reverify: 'SELECT * FROM pack_reverify ORDER BY import_id, table_name, id', objects: 'SELECT * FROM objects ORDER BY hash',
      library_raters: `${LATEST_CONSENTS} ORDER BY r.name`, library_rater_consents: 'SELECT * FROM library_rater_consents ORDER BY rater, seq',
    }
    const sql = own[table]
    if (sql === undefined) {
      throw new UsageError(LIBRARY_CODES.unknownTable, `--table ${JSON.stringify(table)}: a pack table (${[...FACT_TABLES, ...EVENT_TABLES].join(', ')}) or one of the library's own (${Object.keys(own).join(', ')})`, { location: { field: 'table' } })
    }
    yield* db.prepare(sql).all() as Record<string, unknown>[]
  }

  /** The fact of this id as `query` gives it, or nothing. */
  private async *factById(table: FactTable, id: string): AsyncGenerator<Record<string, unknown>> {
    const where = this.db.prepare(`SELECT needs_reverify, import_id, EXISTS (SELECT 1 FROM pack_retractions WHERE target = ?) AS retracted FROM ${this.factKeys()} WHERE table_name = ? AND id = ?`)
      .get(targetPrefix(table) + id, table, id) as { needs_reverify: number; import_id: number; retracted: number } | undefined
    if (where === undefined) return
    const text = await this.factText(table, id)
    if (text !== undefined) yield factRecord(id, text, where.needs_reverify, where.import_id, where.retracted)
  }

  /**
   * Every fact of a table as `query` gives it, in no set order: the rows kept as text, then those kept as
   * references part by part (each part opened once, each of its row groups decoded once). For a reader
   * that keys or sorts them itself, as a publish does; it costs no sort.
   */
  async *factsAnyOrder(table: FactTable): AsyncGenerator<Record<string, unknown>> {
    const retracted = this.db.prepare('SELECT 1 FROM pack_retractions WHERE target = ?').pluck()
    const prefix = targetPrefix(table)
    for await (const f of this.storedFacts(table)) yield factRecord(f.id, f.text, f.needsReverify, f.importId, retracted.get(prefix + f.id) === undefined ? 0 : 1)
  }

  /** The facts of a table as they are stored (storedFacts), read a page at a time. */
  private async *storedFacts(table: FactTable): AsyncGenerator<{ id: string; text: string; needsReverify: number; importId: number }> {
    const db = this.db
    const textPage = db.prepare('SELECT id, row AS text, needs_reverify AS needsReverify, import_id AS importId FROM facts WHERE table_name = ? AND id > ? ORDER BY id LIMIT ?')
    for (let after = ''; ;) {
      const page = textPage.all(table, after, QUERY_PAGE) as { id: string; text: string; needsReverify: number; importId: number }[]
      yield* page
      if (page.length < QUERY_PAGE) break
      after = page.at(-1)!.id
    }
    if (schemaVersionOf(db) < REFERENCES_SCHEMA) return
    // The references in part order (a temporary table of the library's connection), read a page at a time.
    const refs = `temp.query_refs_${++this.scratchTables}`
    db.prepare(`CREATE TABLE ${refs} AS ${HELD_REF.replace('SELECT', 'SELECT r.id, r.needs_reverify AS needsReverify, r.import_id AS importId,')} WHERE r.table_name = ? ORDER BY r.part, r.part_row`).run(table)
    const refPage = db.prepare(`SELECT rowid, id, needsReverify, importId, part, partRow FROM ${refs} WHERE rowid > ? ORDER BY rowid LIMIT ?`)
    const reader = this.partRows(table)
    try {
      for (let after = 0; ;) {
        const page = refPage.all(after, QUERY_PAGE) as { rowid: number; id: string; needsReverify: number; importId: number; part: string; partRow: number }[]
        for (const r of page) yield { id: r.id, text: await reader.text(r.part, r.partRow), needsReverify: r.needsReverify, importId: r.importId }
        if (page.length < QUERY_PAGE) break
        after = page.at(-1)!.rowid
      }
    } finally {
      await reader.close()
      db.exec(`DROP TABLE IF EXISTS ${refs}`)
    }
  }

  /**
   * Every fact of a table in id order: storedFacts gathered into a scratch database of their own (an
   * anonymous SQLite database, which spills to a temporary file past its small page cache), and given in
   * id order by SQLite's sorter, whose memory is bounded too. The scratch database is the query's own, so
   * the caller may use the library between rows.
   */
  private async *factsInIdOrder(table: FactTable): AsyncGenerator<Record<string, unknown>> {
    const scratch = new Database('')
    try {
      scratch.pragma('journal_mode = OFF')
      scratch.pragma('synchronous = OFF')
      scratch.pragma('cache_size = -16384')
      scratch.exec('CREATE TABLE facts (id TEXT NOT NULL, row TEXT NOT NULL, needs_reverify INTEGER NOT NULL, import_id INTEGER NOT NULL); BEGIN')
      const put = scratch.prepare('INSERT INTO facts VALUES (?, ?, ?, ?)')
      for await (const f of this.storedFacts(table)) put.run(f.id, f.text, f.needsReverify, f.importId)
      scratch.exec('COMMIT')
      const retracted = this.db.prepare('SELECT 1 FROM pack_retractions WHERE target = ?').pluck()
      const prefix = targetPrefix(table)
      for (const r of scratch.prepare('SELECT id, row, needs_reverify, import_id FROM facts ORDER BY id').iterate() as Iterable<{ id: string; row: string; needs_reverify: number; import_id: number }>) {
        yield factRecord(r.id, r.row, r.needs_reverify, r.import_id, retracted.get(prefix + r.id) === undefined ? 0 : 1)
      }
    } finally {
      scratch.close()
    }
  }

  /**
   * Writes an object under its name, hashing it as it is written: named only when the bytes are the name's
   * (a file is streamed, so an object of any size takes a buffer's worth of memory). Returns its size.
   */
  private async writeObjectFile(hex: string, ext: string, source: Uint8Array | { path: string }): Promise<number> {
    const path = this.objectFile(`sha256:${hex}`, ext)
    await mkdir(dirname(path), { recursive: true })
    const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
    const sha = createHash('sha256')
    let bytes = 0
    try {
      const out = await open(tmp, 'wx')
      try {
        if (source instanceof Uint8Array) {
          sha.update(source)
          bytes = source.byteLength
          await writeFully(out, source)
        } else {
          const { fh } = await openRegularFile(source.path)
          try {
            for await (const chunk of fh.createReadStream({ highWaterMark: 1 << 20, autoClose: false }) as AsyncIterable<Buffer>) {
              sha.update(chunk)
              bytes += chunk.byteLength
              await writeFully(out, chunk)
            }
          } finally {
            await fh.close()
          }
        }
        await out.sync()
      } finally {
        await out.close()
      }
      const got = sha.digest('hex')
      if (got !== hex) throw new PipeError(LIBRARY_CODES.objectHash, `an object named sha256:${hex} hashes to sha256:${got}; it is not stored`)
      await rename(tmp, path)
      // The row that names it commits next: the name must be as durable as the row.
      await fsyncDir(dirname(path))
      return bytes
    } catch (err) {
      await rm(tmp, { force: true })
      throw err
    }
  }
}

/** Where a referenced fact's row is: its part's hash and its row in it, by the fact's table and id (a WHERE to follow). */
const HELD_REF = 'SELECT p.object AS part, r.part_row AS partRow FROM fact_refs r JOIN fact_parts p ON p.id = r.part'

/**
 * Rows of the library's parts of one table as RFC 8785 text, the last part kept open: rows asked for part
 * by part, ascending within each, open each part once and decode each of its row groups once. The parts
 * passed the check when they were imported and are named by their hash; one that no longer reads is
 * `library.part-unreadable`.
 */
export class PartRowTexts {
  private open: { object: string; part: PackPart } | undefined

  constructor(private readonly fileOf: (part: string) => string, private readonly table: FactTable) {}

  async text(part: string, row: number): Promise<string> {
    const path = this.fileOf(part)
    try {
      if (this.open?.object !== part) {
        await this.close()
        const opened = await openPart(path, PACK_TABLES[this.table])
        if (!opened.ok) throw new PartReadError(opened.findings[0]!)
        this.open = { object: part, part: opened.part }
      }
      return rowText(await this.open.part.rowAt(row))
    } catch (err) {
      if (!(err instanceof PartReadError)) throw err
      throw new PipeError(LIBRARY_CODES.partUnreadable, `${path}: the library's part ${part} of ${this.table}: ${err.finding.detail} (${err.finding.code})`, { location: { file: path } })
    }
  }

  async close(): Promise<void> {
    const open = this.open
    this.open = undefined
    await open?.part.close()
  }
}

/** The schema that keeps facts as references to their part rows (fact_parts, fact_refs). */
const REFERENCES_SCHEMA = 5

/** Rows a query reads from the database at once. */
const QUERY_PAGE = 1024

/** A fact as `query` gives it. */
function factRecord(id: string, text: string, needsReverify: number, importId: number, retracted: number): Record<string, unknown> {
  return { id, row: JSON.parse(text) as unknown, needs_reverify: needsReverify === 1, retracted: retracted === 1, import_id: importId }
}

/** A pack time one second after `time` (both whole seconds, Z). */
function secondAfter(time: string): string {
  return new Date(Date.parse(time) + 1000).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** How a retraction names a record of a fact table (`pattern:<id>`); tables no target names get a prefix none matches. */
function targetPrefix(table: string): string {
  return ({ patterns: 'pattern:', ants: 'ant:', quickstart: 'quickstart:' } as Record<string, string>)[table] ?? '\u0000'
}

/**
 * The record a pack row is of or about, as a target (`pattern:<id>`, `ant:<id>`, `quickstart:<id>`, or a
 * rating's `search_run:...`); undefined for rows of no record (tilings, rules, raters, score_models).
 */
export function rowTarget(table: string, row: Record<string, unknown>): string | undefined {
  switch (table) {
    case 'patterns': case 'ants': case 'quickstart': return `${targetPrefix(table)}${String(row.id)}`
    case 'verifications': case 'sightings': return `pattern:${String(row.pattern_id)}`
    case 'provenance': case 'annotations': case 'media': case 'ratings': case 'aliases': return typeof row.target === 'string' ? row.target : undefined
    default: return undefined
  }
}

/**
 * A row's sort columns' values, each as text, joined by U+001F (no pack text holds it): a fact's id (the
 * rules' three columns), and the first part of an event's key.
 */
export function sortKey(values: readonly unknown[]): string {
  return values.map((v) => (v === null || v === undefined ? '' : String(v))).join('\u001f')
}

/** An event's key as stored: its sort key, U+001F, and the first 128 bits of its row text's SHA-256 in hex. */
function eventKey(sortKey: string, row: string): string {
  return `${sortKey}\u001f${rowDigest(row)}`
}

function rowDigest(row: string): string {
  return createHash('sha256').update(row).digest('hex').slice(0, 32)
}

function schemaVersionOf(db: Database.Database): number {
  const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'library_meta'").pluck().get() !== undefined
  if (!hasMeta) return 0
  const v = db.prepare("SELECT value FROM library_meta WHERE key = 'schema_version'").pluck().get() as string | undefined
  return v === undefined ? 0 : Number(v)
}

/** Refuses a file that is not a library of a schema this build knows: another SQLite database, or a newer library. */
function checkSchema(db: Database.Database, path: string): void {
  const version = schemaVersionOf(db)
  if (version === 0) {
    const tables = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'").pluck().get() as number
    if (tables > 0) throw new PipeError(LIBRARY_CODES.notALibrary, `${path} is a SQLite database of other tables, not a pipe library`, { exitCode: 2, location: { file: path } })
  }
  if (version > LIBRARY_SCHEMA_VERSION) {
    throw new PipeError(LIBRARY_CODES.newer, `${path} is a library of schema ${version}; this pipe knows schemas up to ${LIBRARY_SCHEMA_VERSION} (a newer pipe made it)`, { exitCode: 2, location: { file: path } })
  }
}

/** Takes the database up to LIBRARY_SCHEMA_VERSION, one step a transaction. */
function migrate(db: Database.Database): void {
  for (let v = schemaVersionOf(db); v < LIBRARY_SCHEMA_VERSION; v++) {
    // IMMEDIATE, and the version read again under the lock: another process opening the library at the
    // same time may have taken this step already (migration 3 applied twice would double every event key).
    db.transaction(() => {
      if (schemaVersionOf(db) === v) migrationStep(db, v)
    }).immediate()
  }
}

/** Migration `v` (to v + 1), inside a transaction the caller holds. */
function migrationStep(db: Database.Database, v: number): void {
  db.exec(MIGRATIONS[v]!)
  db.prepare("INSERT INTO library_meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(String(v + 1))
}
