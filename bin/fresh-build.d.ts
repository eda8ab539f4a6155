/** Whether dist/ may run: its stamp dist/.built exists and no file under src/ is newer; MDS_SOURCES=1 says no. */
export function freshBuild(root: string, env?: Record<string, string | undefined>): boolean;
