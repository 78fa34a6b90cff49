import {RESOURCES} from '../../resources';
import {expect} from '@loopback/testlab';
import {asUser, AuthedClient, givenTeam} from '../fixtures/security';
import {givenRunningApp, TestApp} from '../fixtures/test-app';
import {truncateAll} from '../fixtures/test-database';
import {givenPeople, People} from '../fixtures/test-people';

describe('array columns take the lists people write', () => {
  let given: TestApp;
  let operator: AuthedClient;
  let people: People;

  before(async () => {
    given = await givenRunningApp();
  });
  after(async () => {
    await given.app.stop();
  });
  beforeEach(async () => {
    await truncateAll();
    operator = asUser(given.client, (await givenTeam(given.app)).operator);
    people = await givenPeople();
  });

  it('creates a reminder with user_ids and group_ids as plain id lists and reads them back', async () => {
    const created = await operator
      .post('/api/reminders')
      .send({
        message: 'standup',
        user_ids: [people.alice, people.bob],
        group_ids: [people.groupId],
      })
      .expect(201);
    expect(created.body.user_ids).to.deepEqual([people.alice, people.bob]);
    const read = await operator
      .get(`/api/reminders/${created.body.id}`)
      .expect(200);
    expect(read.body.user_ids).to.deepEqual([people.alice, people.bob]);
    expect(read.body.group_ids).to.deepEqual([people.groupId]);
  });

  it('patches a reminder with plain id lists and reads them back', async () => {
    const created = await operator
      .post('/api/reminders')
      .send({message: 'standup'})
      .expect(201);
    await operator
      .patch(`/api/reminders/${created.body.id}`)
      .send({user_ids: [people.dave], group_ids: [people.groupId]})
      .expect(200);
    const read = await operator
      .get(`/api/reminders/${created.body.id}`)
      .expect(200);
    expect(read.body.user_ids).to.deepEqual([people.dave]);
    expect(read.body.group_ids).to.deepEqual([people.groupId]);
  });

  it('refuses a list of lists with 422 on the list item', async () => {
    const res = await operator
      .post('/api/reminders')
      .send({message: 'standup', user_ids: [[1]]})
      .expect(422);
    expect(res.body.error.details[0].path).to.equal('/user_ids/0');
  });

  it('describes every array column of every model as a flat list in the OpenAPI document', async () => {
    const res = await given.client.get('/api/openapi.json').expect(200);
    const schemas = res.body.components.schemas as Record<
      string,
      {properties?: Record<string, {type?: string; items?: {type?: string}}>}
    >;
    // The models' own schemas (Scheduler, NewScheduler, SchedulerPartial…),
    // not the answers of actions, which list times or results.
    const models = RESOURCES.map(resource => resource.model.modelName);
    const ofModel = (name: string) =>
      models.some(
        model =>
          name === model ||
          name === `New${model}` ||
          name === `${model}Partial` ||
          name === `${model}WithRelations`,
      );
    const arrays = Object.entries(schemas)
      .filter(([name]) => ofModel(name))
      .flatMap(([name, schema]) =>
        Object.entries(schema.properties ?? {})
          .filter(([, property]) => property.type === 'array')
          .map(([property, definition]) => ({name, property, definition})),
      );
    expect(arrays.length).to.be.above(0);
    // Id lists hold integers; a calendar's dates and times, an HTTP
    // target's secret header names and a webhook's events are strings.
    const stringLists = new Set([
      'dates',
      'times',
      'secret_header_names',
      'events',
    ]);
    for (const {name, property, definition} of arrays) {
      expect({name, property, items: definition.items?.type}).to.deepEqual({
        name,
        property,
        items: stringLists.has(property) ? 'string' : 'integer',
      });
    }
  });
});
