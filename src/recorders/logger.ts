// The logger every recorder part takes: a pino-compatible subset, so tests can pass a silent or
// collecting logger. Its own module: the sink and the recorder base both use it, and neither
// imports the other for it.

export interface RecorderLogger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

export const silentLogger: RecorderLogger = { debug() {}, info() {}, warn() {}, error() {} };
