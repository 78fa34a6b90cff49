import {Component, createBindingFromClass} from '@loopback/core';
import {ConsumerBindings} from '../keys';
import {ConsumerObserver} from './consumer.observer';

/** The cron-worker role (APP_MODE=worker). */
export class ConsumerComponent implements Component {
  bindings = [
    createBindingFromClass(ConsumerObserver, {key: ConsumerBindings.OBSERVER}),
  ];
}
