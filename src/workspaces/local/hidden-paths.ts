import { parseDatabaseUrl } from '../../store/index.js';

/**
 * What runs must never see, whatever the operator binds: the data directory (the SQLite file,
 * every workspace), the database files and the config file.
 */
export interface HiddenPathsInput {
  dataDir: string;
  database: { url: string };
  configFile?: string;
}

export function hiddenPaths(config: HiddenPathsInput): string[] {
  const hidden = [config.dataDir];
  const target = parseDatabaseUrl(config.database.url);
  if ('kind' in target && target.kind === 'sqlite' && target.file !== ':memory:') {
    hidden.push(target.file, `${target.file}-wal`, `${target.file}-shm`, `${target.file}-journal`);
  }
  if (config.configFile) hidden.push(config.configFile);
  return hidden;
}
