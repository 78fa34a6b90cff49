import {Component, createBindingFromClass} from '@loopback/core';
import {ProducerBindings} from '../keys';
import {ProducerObserver} from './producer.observer';

/** The cron-scheduler role (APP_MODE=scheduler). */
export class ProducerComponent implements Component {
  bindings = [
    createBindingFromClass(ProducerObserver, {key: ProducerBindings.OBSERVER}),
  ];
}
