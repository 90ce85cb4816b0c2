import { describe, expect, it } from 'vitest';
import { DEFAULT_LOG_SETTINGS, LogSettings, logAllows, logSettingsForLevel, severityOfLevel, thresholdFor, updatedLogSettings } from '../../../src/config/log-settings.js';

describe('log settings', () => {
  it('an update applies whole; a refused one names the setting and changes nothing', () => {
    const settings = new LogSettings();
    const seen: unknown[] = [];
    settings.onChange((value) => seen.push(value));
    expect(settings.update({ log_info: false, log_verbose_level: 3 })).toBeUndefined();
    expect(settings.value).toEqual({ ...DEFAULT_LOG_SETTINGS, log_info: false, log_verbose_level: 3 });
    expect(settings.update({ log_error: false, log_verbose_level: 1.5 })).toMatch(/log_verbose_level' must be an integer/);
    expect(settings.value).toEqual({ ...DEFAULT_LOG_SETTINGS, log_info: false, log_verbose_level: 3 });
    expect(seen).toHaveLength(1);
  });

  it.each([
    [{ log_warning: 1 }, /log_warning' must be a boolean/],
    [{ log_verbose_level: 2 ** 32 }, /from 0 to 4294967295/],
    [{ log_format: 'iso8601' }, /one of default, ISO8601/],
    [{ log_file: 5 }, /log_file' must be a string/],
    [{ log_file: 'out.log' }, /cannot be changed at run time/],
    [{ verbose: 1 }, /unknown log setting 'verbose'/],
  ])('refuses %j', (update, message) => {
    const result = updatedLogSettings(DEFAULT_LOG_SETTINGS, update);
    expect('error' in result && result.error).toMatch(message);
  });

  it('severity switches are independent; verbose lines need their level', () => {
    const settings = { ...DEFAULT_LOG_SETTINGS, log_info: false, log_verbose_level: 1 };
    expect(logAllows(settings, 'error')).toBe(true);
    expect(logAllows(settings, 'warning')).toBe(true);
    expect(logAllows(settings, 'info')).toBe(false);
    expect(logAllows(settings, 'verbose', 1)).toBe(true);
    expect(logAllows(settings, 'verbose', 2)).toBe(false);
  });

  it('--log-level sets the starting switches, and the logger threshold follows the verbose level', () => {
    expect(logSettingsForLevel('info')).toEqual({ log_verbose_level: 0, log_info: true, log_warning: true, log_error: true });
    expect(logSettingsForLevel('warn')).toEqual({ log_verbose_level: 0, log_info: false, log_warning: true, log_error: true });
    expect(logSettingsForLevel('debug')).toMatchObject({ log_verbose_level: 1, log_info: true });
    expect(thresholdFor({ ...DEFAULT_LOG_SETTINGS, log_verbose_level: 0 })).toBe('info');
    expect(thresholdFor({ ...DEFAULT_LOG_SETTINGS, log_verbose_level: 1 })).toBe('debug');
    expect(thresholdFor({ ...DEFAULT_LOG_SETTINGS, log_verbose_level: 7 })).toBe('trace');
    expect([60, 50, 40, 30, 20, 10].map(severityOfLevel)).toEqual([
      { severity: 'error', verboseLevel: 0 },
      { severity: 'error', verboseLevel: 0 },
      { severity: 'warning', verboseLevel: 0 },
      { severity: 'info', verboseLevel: 0 },
      { severity: 'verbose', verboseLevel: 1 },
      { severity: 'verbose', verboseLevel: 2 },
    ]);
  });
});
