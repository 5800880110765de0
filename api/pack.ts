/** JETCARP pack format 1.0's rules as functions: reading a store's tables, exporting, and the table schemas. */
export { exportPack, chooseManifest, storeTableRows, type ExportOptions, type ExportResult } from '../src/formats/pack/export/export.js'
export { storeIndexLoader } from '../src/formats/pack/documents/store.js'
export { PACK_TABLES, type PackTableName, type TableSchema } from '../src/formats/pack/tables/table-schemas.js'
