/** One page of a list, and the way to the next. */
export class Page<T> implements AsyncIterable<T> {
  readonly data: T[];
  /** The cursor of the next page (from the Link rel="next" header); undefined on the last page. */
  readonly nextCursor: string | undefined;
  readonly #next: (cursor: string) => Promise<Page<T>>;

  constructor(data: T[], nextCursor: string | undefined, next: (cursor: string) => Promise<Page<T>>) {
    this.data = data;
    this.nextCursor = nextCursor;
    this.#next = next;
  }

  hasNextPage(): boolean {
    return this.nextCursor !== undefined;
  }

  async getNextPage(): Promise<Page<T>> {
    if (this.nextCursor === undefined) throw new Error('This is the last page');
    return this.#next(this.nextCursor);
  }

  /** This page and every following one. */
  async *pages(): AsyncGenerator<Page<T>> {
    let page: Page<T> = this;
    yield page;
    while (page.hasNextPage()) {
      page = await page.getNextPage();
      yield page;
    }
  }

  /** Every item from this page on, fetching pages as the loop needs them. */
  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for await (const page of this.pages()) yield* page.data;
  }
}

/**
 * What list methods return: await it for the first page, or iterate it (`for await`) for every item
 * across pages (one request per page, as the loop goes).
 */
export class PagePromise<T> implements PromiseLike<Page<T>>, AsyncIterable<T> {
  readonly #first: () => Promise<Page<T>>;
  #promise: Promise<Page<T>> | undefined;

  constructor(first: () => Promise<Page<T>>) {
    this.#first = first;
  }

  #page(): Promise<Page<T>> {
    this.#promise ??= this.#first();
    return this.#promise;
  }

  // biome-ignore lint/suspicious/noThenProperty: PromiseLike on purpose (await list() gives the first page)
  then<A = Page<T>, B = never>(
    onFulfilled?: ((page: Page<T>) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.#page().then(onFulfilled, onRejected);
  }

  /** Every page, starting with the first. */
  async *pages(): AsyncGenerator<Page<T>> {
    yield* (await this.#page()).pages();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    yield* await this.#page();
  }
}

/** The cursor of the Link header's rel="next" URL. */
export function nextCursor(link: string | null): string | undefined {
  if (!link) return undefined;
  for (const part of link.split(',')) {
    const m = /<([^>]*)>\s*;\s*rel="?next"?/i.exec(part);
    if (m) return new URL(m[1], 'http://link.invalid').searchParams.get('cursor') ?? undefined;
  }
  return undefined;
}
