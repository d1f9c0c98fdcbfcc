/**
 * Autotrace's rule for views (the service's interface: "with auto_trace true, leave blank or
 * include people.people_keys:* in the view"): a search with autotrace and a view that lacks the
 * people keys is refused by the service (400), after the run has started. Checked where the
 * view's fields are known: `validate` and `plan` (declared and pre-made views), `plan` (a view
 * the service lists).
 */

/** Fields of a view that carry the people keys: the whole `people` field, or its keys. */
const PEOPLE_KEYS = new Set(['people', 'people.people_keys']);

/** Whether a view with these fields may be used with autotrace. */
export function viewCarriesPeopleKeys(fields: readonly string[]): boolean {
  return fields.some((field) => PEOPLE_KEYS.has(field.replace(/:\*$/, '')));
}

/** Why a job's autotrace search with view `view` (of these fields) would be refused. */
export function autotraceViewMessage(view: string, premade: boolean): string {
  const fix = premade
    ? 'choose a view that has them (declare one under views:), or leave view: out'
    : `add people.people_keys:* to view '${view}', or leave view: out`;
  return `view '${view}' has no people keys (people.people_keys:*), which the service requires of a view used with auto_trace (it refuses the search, 400): ${fix}`;
}
